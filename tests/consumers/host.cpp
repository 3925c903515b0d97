// SPDX-License-Identifier: Apache-2.0
// host.cpp — an out-of-tree C++17 host of the installed attnreg. It lists the
// registered plugins into a std::vector, then runs two backends on the same
// batch and checks both against a float64 reference: the installed cpu-ref
// (the default selection) and cxx-example, the C++ plugin of this folder,
// found through ATTNREG_CONF_PATH and forced by name.
#include <string>
#include <vector>

#include "consumer_check.h"

namespace
{

struct registry {
    attn_registry *reg = nullptr;
    explicit registry(const char *forced)
    {
        attn_registry_options opt;
        attn_registry_options_init(&opt);
        opt.forced_backend = forced;
        opt.fail_on_conf_error = 1;
        if (attn_registry_open(&opt, &reg) != ATTN_OK)
            std::fprintf(stderr, "host.cpp: %s\n", attn_last_error());
    }
    ~registry()
    {
        attn_registry_close(reg);
    }
    registry(const registry &) = delete;
    registry &operator=(const registry &) = delete;
};

bool run_one(const cc_problem &p, const char *forced, const std::string &expect)
{
    registry r(forced);
    if (!r.reg)
        return false;
    std::vector<std::string> names;
    for (size_t k = 0; k < attn_registry_plugin_count(r.reg); k++) {
        attn_plugin_info info{};
        info.struct_size = sizeof info;
        if (attn_registry_plugin(r.reg, k, &info) == ATTN_OK)
            names.emplace_back(info.name);
    }
    const char *chosen = nullptr;
    double err = cc_run(r.reg, &p, &chosen);
    bool ok = err >= 0.0 && err < 1e-4 && chosen && expect == chosen;
    std::string listed;
    for (const auto &n : names)
        listed += (listed.empty() ? "" : ",") + n;
    std::printf("host.cpp: plugins [%s], %s: max abs error %.3g vs float64: %s\n", listed.c_str(),
                chosen ? chosen : "(none)", err, ok ? "PASS" : "FAIL");
    return ok;
}

} // namespace

int main()
{
    cc_problem p;
    if (cc_problem_init(&p, 777) != 0)
        return 1;
    bool ok = run_one(p, nullptr, "cpu-ref");
    ok = run_one(p, "cxx-example", "cxx-example") && ok;
    cc_problem_free(&p);
    return ok ? 0 : 1;
}
