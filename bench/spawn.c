/*
 * spawn: runs a command K times with posix_spawn and prints the median
 * wall time of one run in microseconds and the largest peak RSS of the
 * runs in KiB, so that process start-up is measured without a shell.
 *
 *	spawn K command [arg ...]
 */
#define _GNU_SOURCE
#include <sys/resource.h>
#include <sys/wait.h>

#include <err.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

extern char **environ;

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char *argv[])
{
	struct timespec t0, t1;
	struct rusage ru;
	double *us;
	long maxrss = 0;
	int k, i, status;
	pid_t pid;

	if (argc < 3)
		errx(2, "usage: spawn K command [arg ...]");
	k = atoi(argv[1]);
	if (k < 1 || (us = calloc(k, sizeof(*us))) == NULL)
		errx(2, "bad K");
	for (i = 0; i < k; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (posix_spawnp(&pid, argv[2], NULL, NULL, argv + 2,
		    environ) != 0)
			err(1, "%s", argv[2]);
		if (wait4(pid, &status, 0, &ru) == -1)
			err(1, "wait4");
		clock_gettime(CLOCK_MONOTONIC, &t1);
		us[i] = (t1.tv_sec - t0.tv_sec) * 1e6 +
		    (t1.tv_nsec - t0.tv_nsec) / 1e3;
		if (ru.ru_maxrss > maxrss)
			maxrss = ru.ru_maxrss;
	}
	qsort(us, k, sizeof(*us), cmp);
	printf("%.0f %ld\n", us[k / 2], maxrss);
	return 0;
}
