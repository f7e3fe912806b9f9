/*
 * Machine calibration: a one-byte pipe ping-pong between two processes pinned to the
 * given CPUs, printing microseconds per round trip. It measures what
 * `perf bench sched pipe` measures, so its figure on a machine can be set against the
 * "pipe ping-pong across / on one CPU" row of the validation table in
 * bench-schbench/README.md (its kernel-baseline column) to see how this machine's
 * wakeup costs compare with the baseline machine's.
 *
 * Build: gcc -O2 pipe_pingpong.c -o pipe_pingpong
 * Usage: pipe_pingpong CPU_A CPU_B [ROUND_TRIPS]   (e.g. 0 1 across, 0 0 on one CPU)
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof set, &set);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s CPU_A CPU_B [ROUND_TRIPS]\n", argv[0]);
		return 2;
	}
	int a = atoi(argv[1]), b = atoi(argv[2]), n = argc > 3 ? atoi(argv[3]) : 200000;
	int ping[2], pong[2];
	char c = 0;
	if (pipe(ping) || pipe(pong))
		return 1;
	if (fork() == 0) {
		pin(b);
		for (int i = 0; i < n; i++)
			if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1)
				_exit(1);
		_exit(0);
	}
	pin(a);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++)
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			return 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	wait(NULL);
	double us = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / n;
	printf("cpus %d,%d: %.2f usec per round trip\n", a, b, us);
	return 0;
}
