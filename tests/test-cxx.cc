// SPDX-License-Identifier: LGPL-2.1-or-later
//
// A C++ program that embeds libcacheage: every public header compiles as C++ (-Wall -Wextra
// -pedantic, warnings as errors), the structs C and C++ share have the same layout in both
// (tests/test-cxx-layout.c is the C side), and a cache of C++ objects ages as the contract
// says, touched from another std::thread as well. TAP on stdout.

#include <cacheage/age.h>
#include <cacheage/dcache.h>
#include <cacheage/plugin.h>
#include <cacheage/replay.h>
#include <cacheage/trace.h>
#include <cacheage/value.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "test-cxx-layout.h"

namespace {

int n_test;
int n_failed;

void check(bool ok, const std::string &what)
{
        n_test++;
        if (!ok)
                n_failed++;
        std::printf("%s %d - %s\n", ok ? "ok" : "not ok", n_test, what.c_str());
}

#define LAYOUT(type, member) cxx_layout{ #type "." #member, sizeof(type), offsetof(type, member) }
const cxx_layout cxx_layouts[] = { CXX_LAYOUTS(LAYOUT) };

// An object of the embedding program: the node first, as the README's example has it.
struct Entry {
        ca_node node;
        std::string key;
        bool live;
};

class Cache {
public:
        explicit Cache(size_t n) : entries_(n)
        {
                static const ca_cache_ops ops = { Cache::reclaim, nullptr, nullptr };

                if (ca_cache_new(&ops, this, nullptr, &cache_) < 0)
                        throw std::bad_alloc();
                for (size_t i = 0; i < n; i++) {
                        entries_[i].key = "entry-" + std::to_string(i);
                        entries_[i].live = true;
                        ca_cache_insert(cache_, &entries_[i].node);
                }
        }
        ~Cache() { ca_cache_free(cache_); }
        Cache(const Cache &) = delete;
        Cache &operator=(const Cache &) = delete;

        void touch(size_t i) { ca_touch(cache_, &entries_[i].node); }
        void rotate()
        {
                ca_cache_rotate(cache_);
                while (ca_cache_age(cache_, CA_SLICE_NODES, 0) > 0)
                        ;
        }
        ca_stats stats() const
        {
                ca_stats s;

                ca_cache_stats(cache_, &s);
                return s;
        }
        size_t live() const
        {
                size_t n = 0;

                for (const Entry &e : entries_)
                        n += e.live;
                return n;
        }
        size_t reclaimed_calls = 0;

private:
        static ca_status reclaim(ca_cache *, ca_node *node, void *userdata)
        {
                Cache *self = static_cast<Cache *>(userdata);
                Entry *e = reinterpret_cast<Entry *>(node);

                e->live = false;
                self->reclaimed_calls++;
                return CA_RECLAIMED;
        }

        std::vector<Entry> entries_;
        ca_cache *cache_ = nullptr;
};

} // namespace

int main()
{
        const size_t n_layouts = sizeof(cxx_layouts) / sizeof(cxx_layouts[0]);
        const size_t n_objects = 1000, n_kept = 300, rotations = 2 * CA_MAX_AGE_DEFAULT;
        size_t n_c;
        const cxx_layout *c = cxx_c_layouts(&n_c);

        std::printf("1..%zu\n", n_layouts + 5);

        // 1. Layouts: the C compiler's and ours, member by member.
        for (size_t i = 0; i < n_layouts; i++) {
                const cxx_layout &cc = cxx_layouts[i];
                bool same = i < n_c && std::strcmp(c[i].what, cc.what) == 0 &&
                            c[i].size == cc.size && c[i].offset == cc.offset;
                char what[256];

                std::snprintf(what, sizeof(what), "%s: size %zu, offset %zu in C++ and in C (%zu, %zu)",
                              cc.what, cc.size, cc.offset, i < n_c ? c[i].size : 0,
                              i < n_c ? c[i].offset : 0);
                check(same, what);
        }
        check(sizeof(ca_node) == 24 || sizeof(void *) != 8, "struct ca_node is 24 bytes in C++");

        // 2. A cache of C++ objects: those used before every rotation stay, the rest go.
        Cache cache(n_objects);
        for (size_t r = 0; r < rotations; r++) {
                // The access path from another thread, as an embedding program would.
                std::thread t([&cache, n_kept] {
                        for (size_t i = 0; i < n_kept; i++)
                                cache.touch(i);
                });
                t.join();
                cache.rotate();
        }
        ca_stats s = cache.stats();
        check(cache.live() == n_kept && s.objects == n_kept,
              "touched objects stay: " + std::to_string(cache.live()) + " live, " +
                      std::to_string(s.objects) + " in the cache, expected " +
                      std::to_string(n_kept));
        check(cache.reclaimed_calls == n_objects - n_kept && s.reclaimed == n_objects - n_kept,
              "the others are reclaimed: " + std::to_string(s.reclaimed));
        check(s.rotations == rotations, "rotations counted: " + std::to_string(s.rotations));

        // 3. The value parsers, from C++.
        uint64_t usec = 0;
        int r = ca_parse_duration("1h 30min", &usec);
        check(r == 0 && usec == 5400ULL * 1000000, "ca_parse_duration(\"1h 30min\") from C++");

        return n_failed ? 1 : 0;
}
