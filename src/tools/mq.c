/*
 * mq: the front command, for a person at a terminal.  "mq TOOL ARG ..."
 * becomes mq-TOOL ARG ... (exec: no process of mq stays, so the signals
 * and the exit status are the tool's own); "mq help TOOL" shows its page.
 * The tool installed beside mq is run first, so that one installation
 * runs its own tools whatever PATH holds, then the one PATH finds.  The
 * mq-* programs stay the interface that scripts use.
 */
#include <sys/wait.h>

#include <err.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "mq.h"
#include "tools.h"

#define USAGE \
	"usage: mq tool [arg ...]\n" \
	"       mq help [tool]\n" \
	"       mq -h | -V\n"

/* Each a line of the listing; the summaries are their pages' NAME. */
static const struct {
	const char	*name;
	const char	*summary;
} tools[] = {
	{ "send", "add messages to a spool, or to several at once" },
	{ "recv", "claim messages from a spool, or run a job for each" },
	{ "ack", "acknowledge, release, dead-letter or extend claimed messages" },
	{ "sweep", "tidy a spool: expired leases and messages, fragments" },
	{ "dlq", "list, show, redrive and purge dead letters" },
	{ "stat", "count the messages of spools by state, show settings" },
	{ "conf", "show or change the settings of a spool" },
	{ "ls", "list the messages of a spool without claiming them" },
	{ "show", "print the body of a message without claiming it" },
	{ "rm", "remove messages by ID, or every waiting one" },
	{ "log", "what happened: the spool's log, job by job" },
	{ "top", "a live view of spools" },
	{ "relay", "carry messages between hosts through RabbitMQ" },
};
#define NTOOLS	(sizeof(tools) / sizeof(tools[0]))

/* The program's name of a tool: "mq-" and the tool. */
#define NAME_MAX_LEN	16

static void __dead
list(void)
{
	size_t i;

	fputs(USAGE, stdout);
	fputs("Runs mq-tool with the arguments, as mq-tool itself would run.\n"
	    "The tools:\n", stdout);
	for (i = 0; i < NTOOLS; i++)
		printf("  %-6s %s\n", tools[i].name, tools[i].summary);
	fputs("mq help tool: its manual page.  Scripts run mq-tool directly.\n"
	    "See mq(1), and mq(7) for the whole.\n", stdout);
	mq_stdout_close();
	exit(MQ_EX_OK);
}

/* What is not a tool, named (escaped: it is a person's typing) and exit 2. */
static void __dead
unknown(const char *what, const char *word)
{
	fprintf(stderr, "%s: ", getprogname());
	mq_escape(stderr, word, strlen(word));
	fprintf(stderr, ": %s (mq help lists the tools)\n", what);
	exit(MQ_EX_USAGE);
}

static int
known(const char *word)
{
	size_t i;

	for (i = 0; i < NTOOLS; i++)
		if (strcmp(word, tools[i].name) == 0)
			return 1;
	return 0;
}

/*
 * The directory mq was run from, with its trailing slash: its own file
 * where the system tells it (/proc/self/exe on Linux; elsewhere that
 * fails), else argv[0] when it is a path.  0: neither is known.
 */
static int
own_dir(const char *argv0, char *dir, size_t size)
{
	char *slash;
	ssize_t n;

	n = readlink("/proc/self/exe", dir, size - 1);
	if (n > 0 && (size_t)n < size - 1)
		dir[n] = '\0';
	else if (strchr(argv0, '/') == NULL ||
	    strlcpy(dir, argv0, size) >= size)
		return 0;
	if ((slash = strrchr(dir, '/')) == NULL)
		return 0;
	slash[1] = '\0';
	return 1;
}

/*
 * Becomes mq-tool with argv (argv[0] is replaced): the one beside mq, else
 * the one in PATH.  Returns only to die: the tool is not installed (4).
 */
static void __dead
run(const char *tool, const char *argv0, char *argv[])
{
	char name[NAME_MAX_LEN], dir[PATH_MAX], path[PATH_MAX];
	int n, beside;

	n = snprintf(name, sizeof(name), "mq-%s", tool);
	if (n < 0 || (size_t)n >= sizeof(name))
		errx(MQ_EX_USAGE, "%s: no such tool", tool);
	argv[0] = name;
	if ((beside = own_dir(argv0, dir, sizeof(dir)))) {
		n = snprintf(path, sizeof(path), "%s%s", dir, name);
		if (n < 0 || (size_t)n >= sizeof(path))
			errx(MQ_EX_SYS, "%s%s: path too long", dir, name);
		execv(path, argv);
		if (errno != ENOENT && errno != ENOTDIR)
			err(MQ_EX_SYS, "%s", path);
	}
	execvp(name, argv);
	if (errno != ENOENT && errno != ENOTDIR)
		err(MQ_EX_SYS, "%s", name);
	if (beside)
		errx(MQ_EX_SYS, "%s is not installed (not in %s nor in PATH)",
		    name, dir);
	errx(MQ_EX_SYS, "%s is not installed (not in PATH)", name);
}

/*
 * Shows the page with man, in a child waited for, and exits 0 when it
 * did.  Returns when it could not: 0, man has no such page (and says so
 * on stderr); -1, man is not installed.
 */
static int
man(const char *section, const char *page)
{
	struct sigaction ign, oint, oquit;
	pid_t pid;
	int status;

	if (fflush(stdout) == EOF)
		err(MQ_EX_SYS, "stdout");
	/* A ^C at the pager is man's to answer, as system(3) leaves it. */
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGINT, &ign, &oint);
	sigaction(SIGQUIT, &ign, &oquit);
	switch (pid = fork()) {
	case -1:
		err(MQ_EX_SYS, "fork");
	case 0:
		sigaction(SIGINT, &oint, NULL);
		sigaction(SIGQUIT, &oquit, NULL);
		execlp("man", "man", section, page, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			err(MQ_EX_SYS, "man");
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGQUIT, &oquit, NULL);
	if (WIFSIGNALED(status))
		exit(128 + WTERMSIG(status));
	if (WEXITSTATUS(status) == 0)
		exit(MQ_EX_OK);
	return WEXITSTATUS(status) == 127 ? -1 : 0;
}

/*
 * mq help tool: its page, or when man or the page is missing, its --help,
 * saying so; mq's own page for "mq" or "help".
 */
static void __dead
help(const char *tool, const char *argv0)
{
	char page[NAME_MAX_LEN];
	char *targv[] = { NULL, "--help", NULL };

	if (strcmp(tool, "mq") == 0 || strcmp(tool, "help") == 0) {
		if (man("1", "mq") == -1)
			warnx("man is not installed: the list of tools instead");
		else
			warnx("no manual page mq(1): the list of tools instead");
		list();
	}
	if (!known(tool))
		unknown("no such tool", tool);
	(void)snprintf(page, sizeof(page), "mq-%s", tool);
	if (man("1", page) == -1)
		warnx("man is not installed: %s --help instead", page);
	else
		warnx("no manual page %s(1): %s --help instead", page, page);
	run(tool, argv0, targv);
}

int
main(int argc, char *argv[])
{
	const char *w;

	if (argc < 2)
		list();
	w = argv[1];
	if (strcmp(w, "-h") == 0 || strcmp(w, "--help") == 0)
		list();
	if (strcmp(w, "-V") == 0 || strcmp(w, "--version") == 0) {
		mq_version();
		mq_stdout_close();
		return MQ_EX_OK;
	}
	if (strcmp(w, "help") == 0) {
		if (argc == 2)
			list();
		if (argc > 3)
			mq_usage(USAGE);
		help(argv[2], argv[0]);
	}
	if (w[0] == '-')
		unknown("no such option", w);
	if (!known(w))
		unknown("no such tool", w);
	run(w, argv[0], argv + 1);
}
