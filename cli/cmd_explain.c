/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_explain.c — `attnreg explain SHAPE`: every candidate's verdict in every
 * pass (the asked shape, then one pass per fallback rule that was needed),
 * the fallback and the decision. The exit code is what `select` would return.
 */
#include <string.h>

#include "cli.h"

void cli_help_explain(FILE *out)
{
    fputs("Usage: attnreg explain SHAPE [OPTIONS]\n"
          "\n"
          "Shows how the registry decides for SHAPE: for each pass (pass 0 is the shape\n"
          "as asked, pass k the shape after k fallback rules) every candidate in priority\n"
          "order, accepted or rejected, with the stable reason name, the check that\n"
          "decided, the sentence and the INI file:line when the conf layer decided; then\n"
          "the fallback rule and the rejection that triggered it, and the decision.\n"
          "Candidates after the winner are evaluated too.\n"
          "\n",
          out);
    cli_help_common(out, CLI_ACCEPT_OF_explain);
    fputs("\n"
          "Exit codes (as select): 0 selected; 2 usage error; 3 invalid shape;\n"
          "4 unsupported; 5 forced backend rejects the shape or does not exist;\n"
          "6 conf error; 10 internal.\n",
          out);
}

static const char *verdict_word(const attn_verdict_record *rec)
{
    if (rec->selected)
        return "SELECTED";
    return rec->accepted ? "accepted" : "rejected";
}

static void print_text(const struct cli_common *c, const attn_explanation *ex, attn_status status,
                       const attn_selection *sel, const attn_launch_plan *plan)
{
    char shape_text[512];
    size_t num_records = ex ? attn_explanation_count(ex) : 0;
    size_t num_passes = ex ? attn_explanation_pass_count(ex) : 0;
    int backend_w = 0, reason_w = 0;

    for (size_t k = 0; k < num_records; k++) {
        attn_verdict_record rec = {.struct_size = sizeof rec};
        if (attn_explanation_record(ex, k, &rec) != ATTN_OK)
            continue;
        if (rec.backend && (int)strlen(rec.backend) > backend_w)
            backend_w = (int)strlen(rec.backend);
        if (!rec.accepted && rec.reason_name && (int)strlen(rec.reason_name) > reason_w)
            reason_w = (int)strlen(rec.reason_name);
    }

    attn_shape_format(&c->shape, shape_text, sizeof shape_text);
    printf("shape: %s\n", shape_text);
    for (size_t pass = 0; pass < num_passes; pass++) {
        const char *rule = attn_explanation_pass_rule(ex, pass);
        const attn_shape *pass_shape = attn_explanation_pass_shape(ex, pass);
        if (pass == 0) {
            printf("pass 0: the shape as asked\n");
        } else {
            printf("pass %zu: after fallback rule %s\n", pass, rule ? rule : "?");
            if (pass_shape) {
                attn_shape_format(pass_shape, shape_text, sizeof shape_text);
                printf("  shape: %s\n", shape_text);
            }
        }
        for (size_t k = 0; k < num_records; k++) {
            attn_verdict_record rec = {.struct_size = sizeof rec};
            if (attn_explanation_record(ex, k, &rec) != ATTN_OK || (size_t)rec.pass != pass)
                continue;
            if (rec.accepted) {
                printf("  %-*s  %s\n", backend_w, rec.backend ? rec.backend : "?",
                       verdict_word(&rec));
                continue;
            }
            printf("  %-*s  %s  %-*s  %s: %s", backend_w, rec.backend ? rec.backend : "?",
                   verdict_word(&rec), reason_w, rec.reason_name ? rec.reason_name : "?",
                   rec.predicate ? rec.predicate : "?", rec.message ? rec.message : "");
            if (rec.conf_file)
                printf(" (%s:%d)", rec.conf_file, (int)rec.conf_line);
            putchar('\n');
        }
    }
    if (status == ATTN_OK) {
        printf("decision: ");
        cli_print_selection(stdout, sel);
        if (plan->num_kernels)
            cli_print_plan(stdout, plan);
    } else {
        printf("decision: none (%s)\n", attn_status_name(status));
    }
}

static void print_json(const struct cli_common *c, const attn_explanation *ex, attn_status status,
                       const attn_selection *sel, const attn_launch_plan *plan)
{
    struct cli_json j;
    size_t num_records = ex ? attn_explanation_count(ex) : 0;
    size_t num_passes = ex ? attn_explanation_pass_count(ex) : 0;

    cli_json_init(&j, stdout);
    cli_json_begin_object(&j, NULL);
    cli_json_string_member(&j, "status", attn_status_name(status));
    cli_json_int_member(&j, "exit_code", cli_exit_from_status(status));
    cli_json_shape(&j, "shape", &c->shape);
    cli_json_begin_array(&j, "passes");
    for (size_t pass = 0; pass < num_passes; pass++) {
        const attn_shape *pass_shape = attn_explanation_pass_shape(ex, pass);
        cli_json_begin_object(&j, NULL);
        cli_json_int_member(&j, "pass", (long long)pass);
        cli_json_string_member(&j, "rule", attn_explanation_pass_rule(ex, pass));
        if (pass_shape)
            cli_json_shape(&j, "shape", pass_shape);
        cli_json_begin_array(&j, "verdicts");
        for (size_t k = 0; k < num_records; k++) {
            attn_verdict_record rec = {.struct_size = sizeof rec};
            if (attn_explanation_record(ex, k, &rec) != ATTN_OK || (size_t)rec.pass != pass)
                continue;
            cli_json_begin_object(&j, NULL);
            cli_json_string_member(&j, "backend", rec.backend);
            cli_json_int_member(&j, "priority", rec.priority);
            cli_json_bool_member(&j, "accepted", rec.accepted);
            cli_json_bool_member(&j, "selected", rec.selected);
            cli_json_string_member(&j, "reason", attn_reason_name(rec.reason));
            cli_json_int_member(&j, "reason_code", rec.reason);
            cli_json_string_member(&j, "check", rec.predicate);
            cli_json_string_member(&j, "message", rec.message ? rec.message : "");
            cli_json_string_member(&j, "conf_file", rec.conf_file);
            if (rec.conf_file)
                cli_json_int_member(&j, "conf_line", rec.conf_line);
            else
                cli_json_string_member(&j, "conf_line", NULL);
            cli_json_end_object(&j);
        }
        cli_json_end_array(&j);
        cli_json_end_object(&j);
    }
    cli_json_end_array(&j);
    cli_json_selection(&j, "selection", sel);
    cli_json_plan(&j, "plan", plan);
    if (status != ATTN_OK)
        cli_json_error_member(&j, attn_status_name(status), sel->message,
                              cli_exit_from_status(status));
    cli_json_end_object(&j);
}

int cli_cmd_explain(int argc, char **argv)
{
    struct cli_common c;
    attn_registry *reg;
    attn_explanation *ex = NULL;
    attn_selection sel;
    attn_status status;
    int rc;

    cli_common_init(&c, CLI_ACCEPT_OF_explain);
    for (int i = 1; i < argc; i++) {
        int r;
        if (cli_is_help_flag(argv[i])) {
            cli_help_explain(stdout);
            return CLI_EXIT_OK;
        }
        r = cli_parse_common_flag(&c, argc, argv, &i);
        if (r < 0)
            return CLI_EXIT_USAGE;
        if (r == 0)
            return cli_usage_error("explain: unknown argument '%s'", argv[i]);
    }
    cli_common_finish(&c);

    rc = cli_open_registry(&c, &reg);
    if (rc != CLI_EXIT_OK)
        return rc;
    attn_selection_init(&sel);
    status = attn_registry_explain(reg, &c.shape, &ex);
    if (ex) {
        /* The explanation's own status is authoritative: the call's status
         * may only say whether the explanation could be built. */
        status = attn_explanation_status(ex);
        /* It returns the decision's status (not ATTN_OK on a failed
         * decision, whose message we want); anything else means the
         * selection could not be filled. */
        if (attn_explanation_selection(ex, &sel) != status)
            attn_selection_init(&sel);
    }
    /* The selected GPU backend's launch plan (none for cpu-ref). */
    attn_launch_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.struct_size = sizeof plan;
    if (status != ATTN_OK || attn_registry_describe_plan(reg, &sel, &plan) != ATTN_OK)
        plan.num_kernels = 0;
    if (c.json)
        print_json(&c, ex, status, &sel, &plan);
    else
        print_text(&c, ex, status, &sel, &plan);
    rc = status == ATTN_OK ? CLI_EXIT_OK : cli_report_failure(status, sel.message);
    if (ex)
        attn_explanation_free(ex);
    attn_registry_close(reg);
    return rc;
}
