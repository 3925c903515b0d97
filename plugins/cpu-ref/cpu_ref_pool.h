/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_ref_pool.h — the small thread pool a cpu-ref backend object owns.
 *
 * The pool runs one job at a time: a job is `count` independent items, and
 * every participant (the calling thread plus the workers) takes the next item
 * from a shared counter until none are left. The caller's thread works too,
 * so a pool of N threads starts N - 1 workers. Items are claimed dynamically,
 * so which thread computes an item varies from run to run; a job's result
 * must therefore depend only on the item, never on the thread (each thread
 * gets its own scratch slot, identified by `worker`).
 */
#ifndef CPU_REF_POOL_H
#define CPU_REF_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* Computes item `item` with the scratch of participant `worker`. */
typedef void (*cpu_ref_job_fn)(void *arg, int64_t item, int worker);

typedef struct cpu_ref_pool {
    int num_threads; /* participants, the caller included */
    pthread_t *workers;
    int num_started;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_cond_t done;
    uint64_t generation; /* bumped once per job, so workers see each job once */
    int busy;            /* workers still inside the current job */
    int stopping;
    cpu_ref_job_fn job;
    void *job_arg;
    int64_t job_count;
    atomic_int_fast64_t next_item;
} cpu_ref_pool;

/* Starts num_threads - 1 workers. Returns 0, or an errno value (and starts
 * nothing) when a thread could not be created. */
int cpu_ref_pool_init(cpu_ref_pool *pool, int num_threads);
/* Runs every item of the job and returns when all are done. */
void cpu_ref_pool_run(cpu_ref_pool *pool, cpu_ref_job_fn job, void *arg, int64_t count);
void cpu_ref_pool_destroy(cpu_ref_pool *pool);

#endif /* CPU_REF_POOL_H */
