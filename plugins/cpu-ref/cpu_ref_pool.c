/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_ref_pool.c — see cpu_ref_pool.h.
 */
#include "cpu_ref_pool.h"

#include <errno.h>
#include <stdlib.h>

typedef struct worker_start {
    cpu_ref_pool *pool;
    int worker;
} worker_start;

/* Takes items from the shared counter until the job is exhausted. */
static void drain_items(cpu_ref_pool *pool, int worker)
{
    for (;;) {
        int64_t item = atomic_fetch_add_explicit(&pool->next_item, 1, memory_order_relaxed);
        if (item >= pool->job_count)
            return;
        pool->job(pool->job_arg, item, worker);
    }
}

static void *worker_main(void *arg)
{
    cpu_ref_pool *pool = ((worker_start *)arg)->pool;
    int worker = ((worker_start *)arg)->worker;
    free(arg);
    uint64_t seen = 0;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->stopping && pool->generation == seen)
            pthread_cond_wait(&pool->wake, &pool->lock);
        if (pool->stopping)
            break;
        seen = pool->generation;
        pthread_mutex_unlock(&pool->lock);
        drain_items(pool, worker);
        pthread_mutex_lock(&pool->lock);
        if (--pool->busy == 0)
            pthread_cond_signal(&pool->done);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

int cpu_ref_pool_init(cpu_ref_pool *pool, int num_threads)
{
    int err;
    pool->num_threads = num_threads < 1 ? 1 : num_threads;
    pool->workers = NULL;
    pool->num_started = 0;
    pool->generation = 0;
    pool->busy = 0;
    pool->stopping = 0;
    pool->job = NULL;
    pool->job_arg = NULL;
    pool->job_count = 0;
    atomic_init(&pool->next_item, 0);
    if ((err = pthread_mutex_init(&pool->lock, NULL)) != 0)
        return err;
    if ((err = pthread_cond_init(&pool->wake, NULL)) != 0) {
        pthread_mutex_destroy(&pool->lock);
        return err;
    }
    if ((err = pthread_cond_init(&pool->done, NULL)) != 0) {
        pthread_cond_destroy(&pool->wake);
        pthread_mutex_destroy(&pool->lock);
        return err;
    }
    if (pool->num_threads > 1) {
        pool->workers = calloc((size_t)pool->num_threads - 1, sizeof *pool->workers);
        if (!pool->workers) {
            cpu_ref_pool_destroy(pool);
            return ENOMEM;
        }
    }
    for (int i = 1; i < pool->num_threads; i++) {
        worker_start *start = malloc(sizeof *start);
        if (!start) {
            cpu_ref_pool_destroy(pool);
            return ENOMEM;
        }
        start->pool = pool;
        start->worker = i;
        err = pthread_create(&pool->workers[i - 1], NULL, worker_main, start);
        if (err != 0) {
            free(start);
            cpu_ref_pool_destroy(pool);
            return err;
        }
        pool->num_started++;
    }
    return 0;
}

void cpu_ref_pool_run(cpu_ref_pool *pool, cpu_ref_job_fn job, void *arg, int64_t count)
{
    if (count <= 0)
        return;
    pool->job = job;
    pool->job_arg = arg;
    pool->job_count = count;
    atomic_store_explicit(&pool->next_item, 0, memory_order_relaxed);
    /* A job smaller than two items is not worth waking anyone for. */
    if (pool->num_started == 0 || count == 1) {
        drain_items(pool, 0);
        return;
    }
    pthread_mutex_lock(&pool->lock);
    pool->busy = pool->num_started;
    pool->generation++;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    drain_items(pool, 0);
    /* Workers may still be finishing their last items: the job is done only
     * when every worker has left drain_items. */
    pthread_mutex_lock(&pool->lock);
    while (pool->busy > 0)
        pthread_cond_wait(&pool->done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}

void cpu_ref_pool_destroy(cpu_ref_pool *pool)
{
    pthread_mutex_lock(&pool->lock);
    pool->stopping = 1;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < pool->num_started; i++)
        pthread_join(pool->workers[i], NULL);
    free(pool->workers);
    pool->workers = NULL;
    pool->num_started = 0;
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
}
