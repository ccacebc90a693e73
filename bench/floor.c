/*
 * floor: the system calls of a message's life in a spool and nothing
 * else (no parsing, no scanning, no error reporting beyond dying), timed
 * in-process.  What mq is compared with in `make bench`.
 *
 *	floor send N nosync|fsync|syncfs DIR
 *		create tmp/i, write, [sync], close, rename to new/i;
 *		fsync:  fsync each file, then new/ once for the batch;
 *		syncfs: write the whole batch, one syncfs(2), rename all,
 *			then fsync new/ once.
 *	floor claim N DIR
 *		rename new/i to cur/i,DEADLINE,1, then unlink it (the batch
 *		made by a previous send).
 *	floor unlink N SIZE DIR
 *		unlink N files of SIZE bytes each, made (not timed) in
 *		DIR/cur and written out (syncfs) first: what an ack costs
 *		at the least, each deleting one message's file.
 *
 * Prints the rate in messages per second.
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include <err.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char *argv[])
{
	char name[64], to[96], body[32], *data;
	int n, i, dir, tmp, new, cur, fd, len, mode = 0;
	size_t size;
	double t0, t1;

	if (argc != 5 && !(argc == 4 && strcmp(argv[1], "claim") == 0))
		errx(2, "usage: floor send N nosync|fsync|syncfs DIR | "
		    "floor claim N DIR | floor unlink N SIZE DIR");
	n = atoi(argv[2]);
	mkdir(argv[argc - 1], 0700);
	if ((dir = open(argv[argc - 1], O_RDONLY | O_DIRECTORY)) == -1)
		err(1, "%s", argv[argc - 1]);
	mkdirat(dir, "tmp", 0700);
	mkdirat(dir, "new", 0700);
	mkdirat(dir, "cur", 0700);
	tmp = openat(dir, "tmp", O_RDONLY | O_DIRECTORY);
	new = openat(dir, "new", O_RDONLY | O_DIRECTORY);
	cur = openat(dir, "cur", O_RDONLY | O_DIRECTORY);
	if (tmp == -1 || new == -1 || cur == -1)
		err(1, "state directories");

	if (strcmp(argv[1], "unlink") == 0) {
		size = strtoul(argv[3], NULL, 10);
		if ((data = calloc(1, size + 1)) == NULL)
			err(1, "calloc");
		memset(data, 'x', size);
		for (i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "%016d", i);
			fd = openat(cur, name, O_WRONLY | O_CREAT | O_EXCL |
			    O_NOFOLLOW, 0600);
			if (fd == -1)
				err(1, "create");
			if (write(fd, data, size) != (ssize_t)size)
				err(1, "write");
			close(fd);
		}
		if (syncfs(cur) == -1)
			err(1, "syncfs");
		t0 = now();
		for (i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "%016d", i);
			if (unlinkat(cur, name, 0) == -1)
				err(1, "unlink");
		}
		t1 = now();
		printf("%.0f\n", n / (t1 - t0));
		return 0;
	}
	t0 = now();
	if (strcmp(argv[1], "send") == 0) {
		mode = strcmp(argv[3], "fsync") == 0 ? 1 :
		    strcmp(argv[3], "syncfs") == 0 ? 2 : 0;
		for (i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "%016d", i);
			fd = openat(tmp, name, O_WRONLY | O_CREAT | O_EXCL |
			    O_NOFOLLOW, 0600);
			if (fd == -1)
				err(1, "create");
			len = snprintf(body, sizeof(body), "%d\n", i + 1);
			if (write(fd, body, len) != len)
				err(1, "write");
			if (mode == 1 && fsync(fd) == -1)
				err(1, "fsync");
			close(fd);
			if (mode != 2 && renameat(tmp, name, new, name) == -1)
				err(1, "rename");
		}
		if (mode == 2) {
			if (syncfs(tmp) == -1)
				err(1, "syncfs");
			for (i = 0; i < n; i++) {
				snprintf(name, sizeof(name), "%016d", i);
				if (renameat(tmp, name, new, name) == -1)
					err(1, "rename");
			}
		}
		if (mode != 0 && fsync(new) == -1)
			err(1, "fsync dir");
	} else {
		for (i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "%016d", i);
			snprintf(to, sizeof(to), "%s,1795975895.696,1", name);
			if (renameat(new, name, cur, to) == -1)
				err(1, "claim %s", name);
			if (unlinkat(cur, to, 0) == -1)
				err(1, "unlink");
		}
	}
	t1 = now();
	printf("%.0f\n", n / (t1 - t0));
	return 0;
}
