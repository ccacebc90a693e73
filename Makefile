.POSIX:
.SUFFIXES:
.SUFFIXES: .c .o

PREFIX = /usr/local
BINDIR = $(PREFIX)/bin
MANDIR = $(PREFIX)/share/man
DOCDIR = $(PREFIX)/share/doc/mq
BASHCOMPDIR = $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR = $(PREFIX)/share/zsh/site-functions
SYSTEMDDIR = $(PREFIX)/lib/systemd/system

CC = cc
# CFLAGS, CPPFLAGS and LDFLAGS are the builder's (a packager passes
# dpkg-buildflags' hardening through them); the language, the warnings and
# the feature macros that the code needs are MQ_CFLAGS, kept whatever
# CFLAGS is given.
CFLAGS = -O2 -g
CPPFLAGS =
LDFLAGS =
MQ_CFLAGS = -std=c17 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L \
	-D_DEFAULT_SOURCE -Isrc/core
# make SANITIZE=1: build with AddressSanitizer and UBSan (set for make check
# too, and the suite runs under them).
SANITIZE =
SAN_1 = -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
SAN_FLAGS = $(SAN_$(SANITIZE))
BSD_CFLAGS = `pkg-config --cflags libbsd-overlay`
# libbsd is linked in statically so that the tools load no shared library
# but libc: start-up cost matters to a tool run once per job.
BSD_LIBS = -Wl,-Bstatic `pkg-config --static --libs libbsd-overlay` \
	-Wl,-Bdynamic

# The layers (src/README): the core, libmq.a, which the tools and the
# relay are built on and which knows neither; the tools, a thin main each
# and the engines of mq-send and mq-recv (fan.c; work.c and job.c); the
# relay.
CORE = src/core
TOOLS = src/tools
RELAY = src/relay
LIBMQ = $(CORE)/libmq.a
LIBOBJ = $(CORE)/claim.o $(CORE)/conf.o $(CORE)/count.o $(CORE)/dead.o $(CORE)/depth.o \
	$(CORE)/enqueue.o $(CORE)/find.o $(CORE)/group.o $(CORE)/history.o $(CORE)/holder.o \
	$(CORE)/key.o $(CORE)/land.o $(CORE)/leave.o $(CORE)/log.o $(CORE)/look.o \
	$(CORE)/name.o $(CORE)/once.o $(CORE)/output.o $(CORE)/place.o $(CORE)/reap.o \
	$(CORE)/receipt.o $(CORE)/send.o $(CORE)/spool.o $(CORE)/stat.o $(CORE)/sweep.o \
	$(CORE)/util.o $(CORE)/wait.o
# mq, the front command, runs the others (mq send ... is mq-send ...).
PROGS = mq mq-send mq-recv mq-ack mq-sweep mq-dlq mq-stat mq-conf mq-ls \
	mq-show mq-rm mq-log mq-top
BIN = bin/mq bin/mq-send bin/mq-recv bin/mq-ack bin/mq-sweep bin/mq-dlq \
	bin/mq-stat bin/mq-conf bin/mq-ls bin/mq-show bin/mq-rm bin/mq-log \
	bin/mq-top
MAN1 = share/man/man1/mq.1 share/man/man1/mq-send.1 share/man/man1/mq-recv.1 \
	share/man/man1/mq-ack.1 share/man/man1/mq-sweep.1 \
	share/man/man1/mq-dlq.1 share/man/man1/mq-stat.1 \
	share/man/man1/mq-conf.1 share/man/man1/mq-ls.1 \
	share/man/man1/mq-show.1 share/man/man1/mq-rm.1 share/man/man1/mq-log.1 \
	share/man/man1/mq-top.1
# mq-relay (RabbitMQ) is built only when pkg-config finds librabbitmq
# (rabbitmq-c); its objects are in no other program and not in libmq.a.
RELAYOBJ = $(RELAY)/mq-relay.o $(RELAY)/broker.o $(RELAY)/push.o \
	$(RELAY)/pull.o
# mq-relay's page, units and completion install with the program, which is
# built only where librabbitmq is found.
MAN1RELAY = share/man/man1/mq-relay.1
UNITSRELAY = mq-relay-push@.service mq-relay-pull@.service
MAN5 = share/man/man5/mq-spool.5
MAN7 = share/man/man7/mq.7

all: build-deps $(BIN) relay

# bin/mq-relay when librabbitmq is there; else one line says so.
relay: $(LIBMQ)
	@if pkg-config --exists librabbitmq 2>/dev/null; then \
	    $(MAKE) bin/mq-relay; else echo "make: librabbitmq not found:" \
	    "mq-relay not built (sh share/deps.sh relay)"; fi

$(RELAYOBJ): $(CORE)/mq.h $(CORE)/compat.h $(TOOLS)/tools.h \
    $(RELAY)/broker.h
# Compiled with rabbitmq-c's own flags (its include directory).
RELAY_CFLAGS = -I$(TOOLS) `pkg-config --cflags librabbitmq`
RELAY_CC = $(CC) $(MQ_CFLAGS) $(CFLAGS) $(CPPFLAGS) $(SAN_FLAGS) \
	$(BSD_CFLAGS) $(RELAY_CFLAGS)
$(RELAY)/mq-relay.o: $(RELAY)/mq-relay.c
	$(RELAY_CC) -c -o $@ $(RELAY)/mq-relay.c
$(RELAY)/broker.o: $(RELAY)/broker.c
	$(RELAY_CC) -c -o $@ $(RELAY)/broker.c
$(RELAY)/push.o: $(RELAY)/push.c
	$(RELAY_CC) -c -o $@ $(RELAY)/push.c
$(RELAY)/pull.o: $(RELAY)/pull.c
	$(RELAY_CC) -c -o $@ $(RELAY)/pull.c
bin/mq-relay: $(RELAYOBJ) $(TOOLS)/cli.o $(LIBMQ)
	@mkdir -p bin
	$(CC) $(LDFLAGS) $(SAN_FLAGS) -o $@ $(RELAYOBJ) $(TOOLS)/cli.o $(LIBMQ) \
	    `pkg-config --libs librabbitmq` $(BSD_LIBS)

# Without libbsd the compiler's errors say nothing of what to install.
# (Skipped when BSD_LIBS is emptied, as on the BSDs and macOS.)
build-deps:
	@[ -z '$(BSD_LIBS)' ] || pkg-config --exists libbsd-overlay \
	    2>/dev/null || { sh share/deps.sh --check build && echo "make:" \
	    "pkg-config finds no libbsd-overlay: install libbsd, or on a BSD" \
	    "run make BSD_CFLAGS= BSD_LIBS=" >&2; exit 1; }

TOOLOBJ = $(TOOLS)/mq.o $(TOOLS)/mq-send.o $(TOOLS)/mq-recv.o $(TOOLS)/mq-ack.o \
	$(TOOLS)/mq-sweep.o $(TOOLS)/mq-dlq.o $(TOOLS)/mq-stat.o \
	$(TOOLS)/mq-conf.o $(TOOLS)/mq-ls.o $(TOOLS)/mq-show.o $(TOOLS)/mq-rm.o $(TOOLS)/mq-log.o \
	$(TOOLS)/mq-top.o $(TOOLS)/fan.o $(TOOLS)/top.o $(TOOLS)/work.o $(TOOLS)/job.o $(TOOLS)/cli.o
$(LIBOBJ) $(TOOLOBJ): $(CORE)/mq.h $(CORE)/compat.h
$(TOOLOBJ): $(TOOLS)/tools.h
$(TOOLS)/work.o $(TOOLS)/job.o: $(TOOLS)/job.h

$(LIBMQ): $(LIBOBJ)
	rm -f $@
	$(AR) -rc $@ $(LIBOBJ)

# Each program is its main, cli.c and the core; mq-send, mq-recv and
# mq-top their engine.
bin/mq: $(TOOLS)/mq.o
bin/mq-send: $(TOOLS)/mq-send.o $(TOOLS)/fan.o
bin/mq-recv: $(TOOLS)/mq-recv.o $(TOOLS)/work.o $(TOOLS)/job.o
bin/mq-ack: $(TOOLS)/mq-ack.o
bin/mq-sweep: $(TOOLS)/mq-sweep.o
bin/mq-dlq: $(TOOLS)/mq-dlq.o
bin/mq-stat: $(TOOLS)/mq-stat.o
bin/mq-conf: $(TOOLS)/mq-conf.o
bin/mq-ls: $(TOOLS)/mq-ls.o
bin/mq-show: $(TOOLS)/mq-show.o
bin/mq-rm: $(TOOLS)/mq-rm.o
bin/mq-log: $(TOOLS)/mq-log.o
bin/mq-top: $(TOOLS)/mq-top.o $(TOOLS)/top.o
ENGINE_mq-send = $(TOOLS)/fan.o
ENGINE_mq-recv = $(TOOLS)/work.o $(TOOLS)/job.o
ENGINE_mq-top = $(TOOLS)/top.o
$(BIN): $(TOOLS)/cli.o $(LIBMQ)
	@mkdir -p bin
	$(CC) $(LDFLAGS) $(SAN_FLAGS) -o $@ $(TOOLS)/$(@F).o $(ENGINE_$(@F)) \
	    $(TOOLS)/cli.o $(LIBMQ) $(BSD_LIBS)

.c.o:
	$(CC) $(MQ_CFLAGS) $(CFLAGS) $(CPPFLAGS) $(SAN_FLAGS) $(BSD_CFLAGS) -c -o $@ $<

FUZZ_SECS = 600
FUZZ_CC = clang
FUZZ_FLAGS = -g -O1 -fsanitize=fuzzer,address,undefined
tests/fuzz/fuzz-name: tests/fuzz/fuzz-name.c $(LIBOBJ:.o=.c) $(TOOLS)/cli.c \
    $(CORE)/mq.h $(CORE)/compat.h $(TOOLS)/tools.h
	$(FUZZ_CC) $(FUZZ_FLAGS) $(BSD_CFLAGS) -I$(CORE) -I$(TOOLS) -o $@ \
	    tests/fuzz/fuzz-name.c $(LIBOBJ:.o=.c) $(TOOLS)/cli.c $(BSD_LIBS)

# make fuzz: FUZZ_SECS of libFuzzer on the name parser and receipt
# validator; what it learns is kept in tests/fuzz/corpus.
fuzz: tests/fuzz/fuzz-name
	mkdir -p tests/fuzz/corpus
	tests/fuzz/fuzz-name -max_total_time=$(FUZZ_SECS) -timeout=10 \
	    -print_final_stats=1 tests/fuzz/corpus tests/fuzz/seeds

tests/name-test: tests/name-test.c $(LIBMQ)
	$(CC) $(MQ_CFLAGS) $(CFLAGS) $(CPPFLAGS) $(SAN_FLAGS) $(BSD_CFLAGS) -o $@ \
	    tests/name-test.c $(LIBMQ) $(BSD_LIBS)

tests/key-test: tests/key-test.c $(LIBMQ)
	$(CC) $(MQ_CFLAGS) $(CFLAGS) $(CPPFLAGS) $(SAN_FLAGS) $(BSD_CFLAGS) -o $@ \
	    tests/key-test.c $(LIBMQ) $(BSD_LIBS)

# The relay tests talk to the broker with these (tests/relay.bats reads
# messages back with amqp-get, tests/relay-pull.bats puts them with
# amqp-put), built, like mq-relay, only when librabbitmq is found.
tests/amqp-get: tests/amqp-get.c
	$(CC) $(MQ_CFLAGS) $(CFLAGS) $(CPPFLAGS) $(SAN_FLAGS) $(RELAY_CFLAGS) \
	    -o $@ tests/amqp-get.c \
	    `pkg-config --libs librabbitmq`
tests/amqp-put: tests/amqp-put.c
	$(CC) $(MQ_CFLAGS) $(CFLAGS) $(CPPFLAGS) $(SAN_FLAGS) $(RELAY_CFLAGS) \
	    -o $@ tests/amqp-put.c \
	    `pkg-config --libs librabbitmq`
amqp-tools:
	@if pkg-config --exists librabbitmq 2>/dev/null; then \
	    $(MAKE) tests/amqp-get tests/amqp-put; fi

# The LD_PRELOAD shim with which tests/faults.bats makes calls fail; not
# sanitized: the tests tell ASan to accept it (see tests/fault.c).
tests/fault.so: tests/fault.c
	$(CC) -O2 -g -Wall -Wextra -Werror -shared -fPIC -o $@ tests/fault.c -ldl

# make check TESTS="tests/a.bats ...": only those files (all by default).
TESTS =
check: deps
	$(MAKE) all tests/name-test tests/key-test tests/fault.so amqp-tools
	sh tests/run $(TESTS)

# The core tests again with every program under valgrind memcheck.
VALGRIND_TESTS = tests/name.bats tests/key.bats tests/send.bats tests/recv.bats \
	tests/ack.bats tests/dlq.bats tests/worker.bats tests/stat.bats \
	tests/show.bats tests/deaths.bats tests/ls.bats
check-valgrind: deps
	$(MAKE) all tests/name-test tests/key-test tests/fault.so
	MQ_VALGRIND=1 sh tests/run $(VALGRIND_TESTS)

# make mutate: whether the tests catch a broken rule: each mutant of
# tests/mutate/mutants built in a copy of the tree and run against its
# tests (a few minutes; MUTATE_ONLY=NAME,... for some).  Not in check.
mutate: deps
	python3 tests/mutate/run

TORTURE_SECS = 600
torture: all
	sh tests/torture $(TORTURE_SECS)

lint:
	mandoc -Tlint -Wwarning $(MAN1) $(MAN1RELAY) $(MAN5) $(MAN7)

demo:
	@sh share/deps.sh build
	$(MAKE) all
	sh share/examples/demo.sh

deps:
	@sh share/deps.sh test

# The version is MQ_VERSION in src/core/mq.h, and only there: every
# tool's -V prints it, make dist names its tarball after it, and
# debian/rules refuses to build a package whose debian/changelog says
# another.
VERSION_OF = sed -n 's/^\#define MQ_VERSION[^"]*"\([^"]*\)".*/\1/p' $(CORE)/mq.h
version:
	@$(VERSION_OF)

# make dist: mq-VERSION.tar.gz of the files git tracks (as they are in the
# work tree), the same bytes on every run: names sorted, the mtime of the
# last commit (or SOURCE_DATE_EPOCH), owner and modes fixed, gzip -n.
dist:
	@top=`git rev-parse --show-toplevel 2>/dev/null` && \
	    [ "`cd "$$top" && pwd -P`" = "`pwd -P`" ] || { echo "make dist:" \
	    "`pwd`: not a git checkout: the tarball is made of the files" \
	    "git tracks (git ls-files)" >&2; exit 1; }
	@v=`$(VERSION_OF)` && [ -n "$$v" ] || { echo "make dist:" \
	    "$(CORE)/mq.h: no MQ_VERSION" >&2; exit 1; }; \
	epoch=$${SOURCE_DATE_EPOCH:-`git log -1 --format=%ct`} && \
	git ls-files -z | LC_ALL=C sort -z | tar --create --null \
	    --no-recursion --files-from=- --transform="s,^,mq-$$v/," \
	    --sort=name --mtime="@$$epoch" --owner=0 --group=0 \
	    --numeric-owner --mode=go-w,a+rX --format=gnu | \
	    gzip -n -9 >mq-$$v.tar.gz.tmp && mv mq-$$v.tar.gz.tmp mq-$$v.tar.gz && \
	echo "mq-$$v.tar.gz"

BENCHBIN = bench/floor bench/spawn bench/true-c bench/amqp-confirm
bench/floor: bench/floor.c
	$(CC) -O2 -o $@ bench/floor.c
bench/spawn: bench/spawn.c
	$(CC) -O2 -o $@ bench/spawn.c
bench/true-c: bench/true-c.c
	$(CC) -O2 -o $@ bench/true-c.c
# The baseline of the relay rows, only where rabbitmq-c is (else the rows
# are skipped with a note).
bench/amqp-confirm: bench/amqp-confirm.c
	if pkg-config --exists librabbitmq; then \
	    $(CC) -std=c17 -D_POSIX_C_SOURCE=200809L -O2 -Wall -Wextra \
	    -o $@ bench/amqp-confirm.c `pkg-config --cflags --libs librabbitmq`; \
	else echo "make: librabbitmq not found: $@ not built"; fi

bench: all $(BENCHBIN)
	@sh share/deps.sh bench
	sh bench/bench.sh

# While developing: the same rows on tmpfs alone, smaller and fewer runs,
# no deep spool and no broker; figures to compare with each other, not
# with the targets' record in bench/README.md.
bench-quick: all bench/floor bench/spawn bench/true-c
	BENCH_FS=/dev/shm BENCH_RUNS=3 BENCH_N=5000 BENCH_DEPTH=20000 \
	    BENCH_GROUP_N=5000 BENCH_JOBS=500 BENCH_LOG_N=100000 \
	    BENCH_ONLY="rates startup workers depth delayed worker expired maxdepth group prio ls history" \
	    sh bench/bench.sh

UNITS = mq-sweep@.service mq-sweep@.timer mq-worker@.service
EXAMPLES = share/doc/mq/examples/cron-producer.sh \
	share/doc/mq/examples/xargs-pool.sh \
	share/doc/mq/examples/thumbnail-worker.conf \
	share/doc/mq/examples/thumbnail-job.sh \
	share/doc/mq/examples/once-result.sh \
	share/doc/mq/examples/redrive-runbook.sh \
	share/doc/mq/examples/shared-spool.sh \
	share/doc/mq/examples/outbox-relay.sh
# Prometheus alerting rules on mq-stat --prometheus, to copy and tune
# (mq-stat(1)).
ALERTS = share/prometheus/mq-alerts.yml

# The units and examples name the programs and the examples where this
# install puts them (a package's PREFIX=/usr: /usr/bin, not /usr/local/bin);
# in the tree they say @BINDIR@ and @DOCDIR@.
SUBST = sed -e 's,@BINDIR@,$(BINDIR),g' -e 's,@DOCDIR@,$(DOCDIR),g'

install: all
	mkdir -p $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
	    $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7 \
	    $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR)/prometheus \
	    $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) \
	    $(DESTDIR)$(SYSTEMDDIR)
	cp -f $(BIN) $(DESTDIR)$(BINDIR)
	cp -f $(MAN1) $(DESTDIR)$(MANDIR)/man1
	cp -f $(MAN5) $(DESTDIR)$(MANDIR)/man5
	cp -f $(MAN7) $(DESTDIR)$(MANDIR)/man7
	for e in $(EXAMPLES); do f=$(DESTDIR)$(DOCDIR)/examples/$${e##*/}; \
	    $(SUBST) $$e >$$f && if [ -x $$e ]; then chmod 755 $$f; \
	    else chmod 644 $$f; fi || exit 1; done
	cp -f $(ALERTS) $(DESTDIR)$(DOCDIR)/prometheus
	for p in $(PROGS); do \
	    cp -f share/completions/mq.bash $(DESTDIR)$(BASHCOMPDIR)/$$p; done
	cp -f share/completions/_mq $(DESTDIR)$(ZSHCOMPDIR)/_mq
	for u in $(UNITS); do $(SUBST) share/systemd/$$u \
	    >$(DESTDIR)$(SYSTEMDDIR)/$$u || exit 1; done
	if [ -x bin/mq-relay ]; then \
	    cp -f bin/mq-relay $(DESTDIR)$(BINDIR) && \
	    cp -f $(MAN1RELAY) $(DESTDIR)$(MANDIR)/man1 && \
	    cp -f share/completions/mq.bash $(DESTDIR)$(BASHCOMPDIR)/mq-relay && \
	    for u in $(UNITSRELAY); do $(SUBST) \
	        share/systemd/$$u >$(DESTDIR)$(SYSTEMDDIR)/$$u || exit 1; \
	    done; fi

uninstall:
	for p in $(PROGS); do rm -f $(DESTDIR)$(BINDIR)/$$p \
	    $(DESTDIR)$(MANDIR)/man1/$$p.1 $(DESTDIR)$(BASHCOMPDIR)/$$p; done
	rm -f $(DESTDIR)$(MANDIR)/man5/mq-spool.5 $(DESTDIR)$(MANDIR)/man7/mq.7
	rm -f $(DESTDIR)$(ZSHCOMPDIR)/_mq
	for u in $(UNITS) $(UNITSRELAY); do rm -f $(DESTDIR)$(SYSTEMDDIR)/$$u; done
	rm -f $(DESTDIR)$(BINDIR)/mq-relay $(DESTDIR)$(MANDIR)/man1/mq-relay.1 \
	    $(DESTDIR)$(BASHCOMPDIR)/mq-relay
	for e in $(EXAMPLES); do rm -f $(DESTDIR)$(DOCDIR)/examples/$${e##*/}; \
	    done
	rm -f $(DESTDIR)$(DOCDIR)/prometheus/mq-alerts.yml
	-rmdir $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR)/prometheus \
	    $(DESTDIR)$(DOCDIR) 2>/dev/null

clean:
	rm -f $(CORE)/*.o $(TOOLS)/*.o $(RELAY)/*.o $(LIBMQ) $(BIN) bin/mq-relay tests/amqp-get \
	    tests/amqp-put tests/name-test tests/key-test $(BENCHBIN) \
	    tests/fuzz/fuzz-name tests/fault.so
	rm -rf bench/tmp

.PHONY: all relay amqp-tools build-deps bench bench-quick check check-valgrind fuzz mutate torture lint demo deps \
	version dist install uninstall clean
