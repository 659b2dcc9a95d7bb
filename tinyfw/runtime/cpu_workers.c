/* tinyfw's CPU workers: threads that run the other cores' parts of a threaded kernel (chapter
   11's THREAD) launched from a CPU graph (graph_cpu.py), with no Python between the parts.

   tf_parallel(call, kernel, args, nargs, cores) runs call(kernel, args, nargs, core, cores)
   for every core at once: core 0 on the calling thread, core c on worker c (started on first
   use, one per other core), and returns when all parts are done. A worker that finds no new
   work spins for SPIN_NS (the next threaded kernel of a decode step comes within
   microseconds), then sleeps on a condition variable until the next job. A second thread
   that calls while a job is under way runs all its parts itself, one after another: slower,
   never wrong.

   The Python side (cpu_workers.py) appends `tf_call`, a switch over the number of buffers
   that calls a kernel with them and (core, cores), and the graph's entry points
   `tf_parts_<n>(b0, ..., b<n-1>, kernel, cores)`, which tf_graph calls like any kernel. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#define MAX_WORKERS 255
#define SPIN_NS 200000LL

typedef void (*tf_caller)(void *kernel, void **args, int nargs, int core, int cores);

static struct {
  tf_caller call;
  void *kernel;
  void **args;
  int nargs, cores;
} job;
static atomic_uint generation; /* one more per job: a worker runs each generation's part once */
static atomic_int unfinished;  /* workers not done with this generation */
static atomic_int sleepers;    /* workers waiting on `wake` */
static int workers;            /* started */
static unsigned first_generation; /* the generation when the workers started */
static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;  /* held by the job's caller */
static pthread_mutex_t sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Wait until the generation is no longer `seen`: spin a while, then sleep. */
static void wait_for_job(unsigned seen) {
  long long start = now_ns();
  for (unsigned spins = 1; atomic_load(&generation) == seen; spins++) {
    relax();
    if (spins % 64 == 0 && now_ns() - start > SPIN_NS) {
      pthread_mutex_lock(&sleep_lock);
      atomic_fetch_add(&sleepers, 1);  /* (before the check below: tf_parallel then wakes us) */
      while (atomic_load(&generation) == seen)
        pthread_cond_wait(&wake, &sleep_lock);
      atomic_fetch_sub(&sleepers, 1);
      pthread_mutex_unlock(&sleep_lock);
    }
  }
}

static void *worker(void *arg) {
  int core = (int)(intptr_t)arg;
  unsigned seen = first_generation;
  for (;;) {
    wait_for_job(seen);
    seen = atomic_load(&generation);
    if (core < job.cores) job.call(job.kernel, job.args, job.nargs, core, job.cores);
    atomic_fetch_sub(&unfinished, 1);
  }
  return 0;
}

/* After a fork the child has none of the parent's threads: it starts its own when needed. */
static void forget_workers(void) {
  workers = 0;
  atomic_store(&sleepers, 0);
  pthread_mutex_init(&busy, 0);
  pthread_mutex_init(&sleep_lock, 0);
  pthread_cond_init(&wake, 0);
}

static void start_workers(int wanted) {
  static int registered;
  if (!registered) registered = pthread_atfork(0, 0, forget_workers) == 0;
  first_generation = atomic_load(&generation);
  while (workers < wanted && workers < MAX_WORKERS) {
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int failed = pthread_create(&thread, &attr, worker, (void *)(intptr_t)(workers + 1));
    pthread_attr_destroy(&attr);
    if (failed) break;  /* (the caller runs the parts no worker takes) */
    workers++;
  }
}

void tf_parallel(tf_caller call, void *kernel, void **args, int nargs, int cores) {
  if (cores <= 1 || pthread_mutex_trylock(&busy) != 0) {
    for (int core = 0; core < cores; core++) call(kernel, args, nargs, core, cores);
    return;
  }
  if (workers < cores - 1) start_workers(cores - 1);
  job.call = call, job.kernel = kernel, job.args = args, job.nargs = nargs, job.cores = cores;
  atomic_store(&unfinished, workers);
  atomic_fetch_add(&generation, 1);
  if (atomic_load(&sleepers) > 0) {
    pthread_mutex_lock(&sleep_lock);
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&sleep_lock);
  }
  call(kernel, args, nargs, 0, cores);
  for (int core = workers + 1; core < cores; core++) call(kernel, args, nargs, core, cores);
  for (unsigned spins = 1; atomic_load(&unfinished) > 0; spins++) {
    relax();
    if (spins % 1024 == 0) sched_yield();  /* (a worker may be waiting for a core) */
  }
  pthread_mutex_unlock(&busy);
}
