/*
 * Independent C reference for validating the `threads` backend of the Rust port.
 *
 * Written from a description of the workload only (docs/benchmarks.md has it), not
 * from schbench's source: one message thread, T workers, the futex one-token semaphore,
 * the Treiber list taken with one swap, one clock read per batch, usleep(s), no lock,
 * no math (the `-L -n 0` configurations). It prints the average RPS and the wakeup
 * latency p50/p99 (exact µs, 0 µs samples dropped), so a run of
 *
 *     reference 4 100 10      vs  schbench --backend threads -L -m 1 -t 4 -n 0 -r 10
 *     reference 4 0 10        vs  schbench --backend threads -L -m 1 -t 4 -n 0 -s 0 -r 10
 *
 * on the same machine tells whether the Rust port adds cost of its own.
 *
 * Build: gcc -O2 -pthread reference.c -o reference
 * Usage: reference WORKERS SLEEP_USEC SECONDS
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define HIST 20000

struct worker {
	unsigned futex;
	unsigned long long wake_ns;
	struct worker *next;
	unsigned long long loops;
	unsigned long hist[HIST];
};

static unsigned msg_futex;
static struct worker *head;
static int stop, live, sleep_us;

static unsigned long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ull + t.tv_nsec;
}

static void post(unsigned *word)
{
	unsigned zero = 0;
	if (__atomic_compare_exchange_n(word, &zero, 1, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
}

static void wait_token(unsigned *word)
{
	for (;;) {
		unsigned one = 1;
		if (__atomic_compare_exchange_n(word, &one, 0, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return;
		syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 0, 0, 0, 0);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned long long stamp = now_ns();

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		__atomic_store_n(&w->futex, 0, __ATOMIC_RELAXED);
		w->wake_ns = stamp;
		struct worker *h = __atomic_load_n(&head, __ATOMIC_RELAXED);
		do
			w->next = h;
		while (!__atomic_compare_exchange_n(&head, &h, w, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
		post(&msg_futex);
		wait_token(&w->futex);
		if (__atomic_load_n(&stop, __ATOMIC_RELAXED))
			break;
		unsigned long long us = (now_ns() - w->wake_ns) / 1000;
		if (us)
			w->hist[us < HIST ? us : HIST - 1]++;
		if (sleep_us)
			usleep(sleep_us);
		stamp = now_ns();
		__atomic_store_n(&w->loops, w->loops + 1, __ATOMIC_RELAXED);
	}
	__atomic_fetch_sub(&live, 1, __ATOMIC_RELEASE);
	post(&msg_futex);
	return NULL;
}

static void *message_main(void *arg)
{
	(void)arg;
	for (;;) {
		__atomic_store_n(&msg_futex, 0, __ATOMIC_RELAXED);
		struct worker *list = __atomic_exchange_n(&head, NULL, __ATOMIC_ACQ_REL);
		if (list) {
			unsigned long long t = now_ns();
			while (list) {
				struct worker *next = list->next;
				list->wake_ns = t;
				post(&list->futex);
				list = next;
			}
		}
		if (__atomic_load_n(&live, __ATOMIC_ACQUIRE) == 0)
			break;
		wait_token(&msg_futex);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s WORKERS SLEEP_USEC SECONDS\n", argv[0]);
		return 2;
	}
	int n = atoi(argv[1]), seconds = atoi(argv[3]);
	sleep_us = atoi(argv[2]);
	struct worker *ws = calloc(n, sizeof *ws);
	pthread_t msg, *threads = calloc(n, sizeof *threads);
	live = n;
	pthread_create(&msg, NULL, message_main, NULL);
	for (int i = 0; i < n; i++)
		pthread_create(&threads[i], NULL, worker_main, &ws[i]);
	sleep(seconds);

	static unsigned long hist[HIST];
	unsigned long long loops = 0;
	unsigned long samples = 0;
	for (int i = 0; i < n; i++) {
		loops += __atomic_load_n(&ws[i].loops, __ATOMIC_RELAXED);
		for (int k = 0; k < HIST; k++) {
			hist[k] += ws[i].hist[k];
			samples += ws[i].hist[k];
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	post(&msg_futex);
	for (int i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
	pthread_join(msg, NULL);

	unsigned long seen = 0;
	int p50 = -1, p99 = -1;
	for (int k = 0; k < HIST; k++) {
		seen += hist[k];
		if (p50 < 0 && seen >= samples * 0.50)
			p50 = k;
		if (p99 < 0 && seen >= samples * 0.99)
			p99 = k;
	}
	printf("C reference: workers %d, sleep %d us: average rps %.2f, wakeup p50 %d p99 %d usec (%lu samples)\n",
	       n, sleep_us, (double)loops / seconds, p50, p99, samples);
	return 0;
}
