/*
 * spawn: runs a command K times with posix_spawn and prints the median
 * wall time of one run in microseconds and the largest peak RSS of the
 * runs in KiB, so that a process is measured without a shell around it.
 *
 *	spawn [-i in] [-o out] [-a argfile] [-r ref] K command [arg ...]
 *
 * -i and -o redirect standard input and output; with -a, run i gets line
 * i of argfile as its last argument.  With -r, each run of the command is
 * paired with a run of ref just before it, and two more numbers follow:
 * ref's median and the median of the run-by-run ratios (command / ref),
 * which the machine's drifting speed does not skew.  ref is a program and
 * its arguments, split at blanks (no quoting).
 */
#define _GNU_SOURCE
#include <sys/resource.h>
#include <sys/wait.h>

#include <err.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REF_MAX	32	/* words of -r's command */

extern char **environ;

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Runs args once; returns the wall time in microseconds. */
static double
run(char **args, const char *in, const char *out, long *maxrss)
{
	posix_spawn_file_actions_t fa;
	struct timespec t0, t1;
	struct rusage ru;
	int status;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	if (in != NULL)
		posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0);
	if (out != NULL)
		posix_spawn_file_actions_addopen(&fa, 1, out,
		    O_WRONLY | O_CREAT | O_APPEND, 0644);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (posix_spawnp(&pid, args[0], &fa, NULL, args, environ) != 0)
		err(1, "%s", args[0]);
	if (wait4(pid, &status, 0, &ru) == -1)
		err(1, "wait4");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	posix_spawn_file_actions_destroy(&fa);
	if (!WIFEXITED(status) || WEXITSTATUS(status) > 1)
		errx(1, "%s exited %d", args[0], WEXITSTATUS(status));
	if (maxrss != NULL && ru.ru_maxrss > *maxrss)
		*maxrss = ru.ru_maxrss;
	return (t1.tv_sec - t0.tv_sec) * 1e6 +
	    (t1.tv_nsec - t0.tv_nsec) / 1e3;
}

int
main(int argc, char *argv[])
{
	const char *in = NULL, *out = NULL, *argfile = NULL;
	char **args, *line = NULL, *ref[REF_MAX + 1] = { NULL }, *word;
	size_t cap = 0;
	ssize_t len;
	FILE *af = NULL;
	double *us, *refus = NULL, *ratio = NULL;
	long maxrss = 0;
	int k, i, n, ch;

	while ((ch = getopt(argc, argv, "+i:o:a:r:")) != -1) {
		switch (ch) {
		case 'i':
			in = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'a':
			argfile = optarg;
			break;
		case 'r':
			for (i = 0, word = strtok(optarg, " \t"); word != NULL;
			    word = strtok(NULL, " \t")) {
				if (i == REF_MAX)
					errx(2, "-r: more than %d words", REF_MAX);
				ref[i++] = word;
			}
			if (i == 0)
				errx(2, "-r: no program");
			break;
		default:
			errx(2, "usage: spawn [-i in] [-o out] [-a argfile] "
			    "[-r ref] K command [arg ...]");
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 2)
		errx(2, "usage: spawn [-i in] [-o out] [-a argfile] K command");
	k = atoi(argv[0]);
	if (k < 1 || (us = calloc(k, sizeof(*us))) == NULL ||
	    (refus = calloc(k, sizeof(*us))) == NULL ||
	    (ratio = calloc(k, sizeof(*us))) == NULL)
		errx(2, "bad K");
	n = argc - 1;
	if ((args = calloc(n + 2, sizeof(*args))) == NULL)
		err(1, NULL);
	memcpy(args, argv + 1, n * sizeof(*args));
	if (argfile != NULL && (af = fopen(argfile, "r")) == NULL)
		err(1, "%s", argfile);
	for (i = 0; i < k; i++) {
		if (af != NULL) {
			if ((len = getline(&line, &cap, af)) <= 0)
				errx(1, "%s: too few lines", argfile);
			line[len - 1] = '\0';
			args[n] = line;
		}
		if (ref[0] != NULL)
			refus[i] = run(ref, in, out, NULL);
		us[i] = run(args, in, out, &maxrss);
		if (ref[0] != NULL)
			ratio[i] = us[i] / refus[i];
	}
	qsort(us, k, sizeof(*us), cmp);
	if (ref[0] != NULL) {
		qsort(refus, k, sizeof(*refus), cmp);
		qsort(ratio, k, sizeof(*ratio), cmp);
		printf("%.0f %ld %.0f %.4f\n", us[k / 2], maxrss, refus[k / 2],
		    ratio[k / 2]);
	} else
		printf("%.0f %ld\n", us[k / 2], maxrss);
	return 0;
}
