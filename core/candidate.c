/* SPDX-License-Identifier: Apache-2.0 */
/* candidate.c — making and freeing candidates (candidate.h). */
#include <stdlib.h>

#include "candidate.h"

attn_candidate *attn_candidate_new(attn_registry *reg, const char *conf_file)
{
    attn_candidate *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    pthread_mutex_init(&c->load_lock, NULL);
    c->registry = reg;
    c->enabled = 1;
    c->conf_file = attn_strdup(conf_file);
    return c;
}

void attn_candidate_free_limits(attn_candidate *c)
{
    free(c->arch_limits);
    c->arch_limits = NULL;
    c->num_arch_limits = 0;
}

void attn_candidate_free(attn_candidate *c)
{
    if (!c)
        return;
    free(c->name);
    free(c->archs_text);
    for (char **w = c->archs; w && *w; w++)
        free(*w);
    free(c->archs);
    free(c->library);
    free(c->conf_file);
    for (uint32_t i = 0; i < c->num_narrow; i++) {
        free(c->narrow[i].key);
        free(c->narrow[i].values);
    }
    free(c->narrow);
    for (uint32_t i = 0; i < c->num_params; i++) {
        free((char *)c->params[i].key);
        free((char *)c->params[i].value);
    }
    free(c->params);
    free(c->load_message);
    free(c->built_archs_text);
    attn_candidate_free_limits(c);
    free(c->probe_message);
    free(c->devices);
    pthread_mutex_destroy(&c->load_lock);
    free(c);
}
