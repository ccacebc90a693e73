load helper

# The calls between the files of the core (src/core/libmq.a), one "caller
# callee" line each, from the symbols each object defines and uses.
core_calls() {
	nm -A -P "$1" | awk '
	{
		f = $1
		sub(/^.*\[/, "", f)
		sub(/\.o\]:$/, "", f)
	}
	$3 ~ /^[TDBR]$/ { def[$2] = f }
	$3 == "U" { use[++n] = f " " $2 }
	END {
		for (i = 1; i <= n; i++) {
			split(use[i], u, " ")
			if ((u[2] in def) && def[u[2]] != u[1])
				print u[1], def[u[2]]
		}
	}' | sort -u
}

@test "core: no call cycle between the files of the core (src/README)" {
	lib="$BATS_TEST_DIRNAME/../src/core/libmq.a"
	assert_file_exist "$lib"
	core_calls "$lib" >"$BATS_TEST_TMPDIR/calls"
	# Something to order: the core's files do call each other.
	assert [ -s "$BATS_TEST_TMPDIR/calls" ]
	run tsort "$BATS_TEST_TMPDIR/calls"
	assert_success
	refute_output --partial loop
}

# The layers are directories (src/README): src/core is libmq.a, whole, and
# knows neither the tools nor the relay; src/tools holds the mains and
# their engines (fan.c, work.c and job.c: tools.h, job.h), src/relay
# mq-relay's files.
@test "core: the layers: src/core is libmq.a and includes nothing of src/tools or src/relay" {
	top="$BATS_TEST_DIRNAME/.."
	run ar t "$top/src/core/libmq.a"
	assert_success
	members=$(printf '%s\n' "$output" | sort)
	files=$(for f in "$top"/src/core/*.c; do f=${f##*/}; echo "${f%.c}.o"; done | sort)
	assert_equal "$members" "$files"
	run grep -lE '#[[:space:]]*include[[:space:]]*"(tools|broker)\.h"' \
	    "$top"/src/core/*.[ch]
	assert_failure 1
	# The engines and their structs are the tools', not the core's.
	run grep -nE 'struct mq_(fan|work|target) \{' "$top/src/core/mq.h"
	assert_failure 1
	for f in "$top"/src/*/mq-*.c "$top"/src/tools/fan.c "$top"/src/tools/work.c \
	    "$top"/src/tools/job.c; do
		case $f in
		*/src/tools/*) ;;
		*/src/relay/mq-relay.c) ;;
		*) fail "$f: a main or an engine outside src/tools" ;;
		esac
	done
}

# The core speaks to nobody: what a person reads is the tools' (cli.c,
# the engines, the mains).  Nor does it ever exit: memory run out is
# ENOMEM like any other error, for the tool to report; the allocators
# that die (xmalloc, xreallocarray, xstrdup) are cli.c's.
@test "core: libmq.a prints nothing and never exits" {
	nm -A -P "$BATS_TEST_DIRNAME/../src/core/libmq.a" >"$BATS_TEST_TMPDIR/nm"
	run awk '$3 == "U" && $2 ~ /^(printf|puts|fputs|fputc|putc|putchar|fprintf|vfprintf|vprintf|dprintf|fwrite|__printf_chk|__fprintf_chk|__vfprintf_chk|perror|err|errx|warn|warnx|verr|verrx|vwarn|vwarnx|exit|_exit|_Exit|quick_exit|abort|__assert_fail|xmalloc|xreallocarray|xstrdup)$/ { print $1, $2 }' \
	    "$BATS_TEST_TMPDIR/nm"
	assert_success
	assert_output ""
	run awk '$3 ~ /^[TDBR]$/ && $2 ~ /^x(malloc|reallocarray|strdup)$/ { print $1, $2 }' \
	    "$BATS_TEST_TMPDIR/nm"
	assert_success
	assert_output ""
	# The rule sees the calls: the core's openat, in more than one file.
	n=$(grep -c '\]: openat U' "$BATS_TEST_TMPDIR/nm")
	[ "$n" -ge 2 ] || fail "nm shows openat undefined in $n objects"
}

@test "core: no platform #if in a .c file but wait.c (compat.h is the one place)" {
	for f in "$BATS_TEST_DIRNAME"/../src/*/*.c; do
		[ "${f##*/}" != wait.c ] || continue
		run grep -n '^[[:space:]]*#[[:space:]]*if' "$f"
		assert_failure 1
		assert_output ""
	done
}

@test "core: no main touches a state directory's fd or reads a receipt's layout" {
	src="$BATS_TEST_DIRNAME/../src/tools"
	run grep -nE '\bsp(\.|->)(fd|tmp|new|cur|dead|reason|last)\b|\.bucket\b|\b(openat|renameat|unlinkat|mq_spool_spares)\(|(strlen|strn?cmp)\([^)]*MQ_DIR_' \
	    "$src"/mq-*.c "$src"/work.c "$src"/job.c
	assert_failure 1
	assert_output ""
}

@test "core: each tool spells its usage once, for usage() and --help" {
	for f in "$BATS_TEST_DIRNAME"/../src/*/mq-*.c; do
		n=$(grep -c '"usage: mq-' "$f")
		[ "$n" -eq 1 ] || fail "$f: usage spelled $n times"
	done
}

# -h, -V and a bad option are handled alike by every tool: one
# mq_common_opt (src/tools/cli.c) as the default: of each getopt switch, not a
# usage() and help() of each tool's own.
@test "core: each tool's -h, -V and bad options go through mq_common_opt" {
	for f in "$BATS_TEST_DIRNAME"/../src/*/mq-*.c; do
		run grep -nE '^(usage|help)\(|\b(usage|help)\(\)|\bmq_version\(' "$f"
		[ "$status" -eq 1 ] || fail "$f: its own option boilerplate: $output"
		grep -q 'mq_common_opt(ch, USAGE, help)' "$f" ||
		    fail "$f: no mq_common_opt"
	done
}

# A death for attempts has one form, "max attempts; last: REASON", made in
# dead.c (mq_reason_spent) for every burier: a claim, a sweep, a worker.
@test "core: the reason of a death for attempts is made in dead.c only" {
	src="$BATS_TEST_DIRNAME/../src"
	run grep -n 'MQ_REASON_MAX_ATTEMPTS' "$src"/*/*.c
	refute_output --regexp '^[^:]*/(claim|receipt|work|depth|group|mq-[a-z]+)\.c:'
	run grep -n 'MQ_REASON_MAX_ATTEMPTS' "$src/core/sweep.c"
	refute_output --regexp 'mq_bury|, *strlen'
}

# A live message leaves the spool one way (leave.c's mq_leave: an ack,
# mq-rm); a burial is the only other way a head leaves its group.
@test "core: only leave.c and dead.c make a group's head leave" {
	run grep -ln 'mq_group_leave(' "$BATS_TEST_DIRNAME"/../src/*/*.c
	assert_success
	refute_output --regexp '/(receipt|find|work|sweep|claim|mq-[a-z]+)\.c$'
	assert_output --partial /leave.c
	assert_output --partial /dead.c
}

# One way in (src/README): mq-send, mq-relay pull and a redrive go
# through enqueue.c (keys, room, sync) and land.c (tree or group); fan.c
# and pull.c hold no key, count nothing and choose no tree themselves,
# and mq-send's admission (credit, waiting for room) is enqueue.c's too.
@test "core: only the enqueue holds keys and counts for room; only land.c chooses tree or group" {
	top="$BATS_TEST_DIRNAME/.."
	nm -A -P "$top/src/core/libmq.a" "$top"/src/tools/*.o "$top"/src/relay/*.o \
	    >"$BATS_TEST_TMPDIR/nm"
	# The rule sees the calls: each is made somewhere.
	for f in mq_key_hold mq_depth_drop mq_group_place mq_tmp_land; do
		grep -q " $f U" "$BATS_TEST_TMPDIR/nm" || fail "$f: not called"
	done
	run awk '$3 == "U" {
		f = $1; sub(/^.*[[\/]/, "", f); sub(/\]?:$/, "", f)
		if ($2 ~ /^mq_(key_(look|hold|drop)|depth|depth_drop)$/ && f != "enqueue.o" ||
		    $2 == "mq_group_place" && f != "land.o" ||
		    $2 ~ /^mq_(tmp_)?land$/ && f != "enqueue.o" && f != "dead.o")
			print f, $2
	}' "$BATS_TEST_TMPDIR/nm"
	assert_success
	assert_output ""
	run grep -n 'max_depth\|drop_oldest\|[>.]credit\|mq_wait' "$top"/src/tools/fan.c
	assert_failure 1
}

# One reaper (reap.c): past its time to live -> buried "ttl"; at max
# attempts -> buried for its attempts; else it lives.  Claims, sweeps and
# counts ask it; the ttl and max attempts come from the spool handle's
# settings, never passed by hand.
@test "core: only the reaper buries for attempts or expiry, with the spool's settings" {
	top="$BATS_TEST_DIRNAME/.."
	nm -A -P "$top/src/core/libmq.a" "$top"/src/tools/*.o "$top"/src/relay/*.o \
	    >"$BATS_TEST_TMPDIR/nm"
	for f in mq_bury_spent mq_burial_expired mq_reap; do
		grep -q " $f U" "$BATS_TEST_TMPDIR/nm" || fail "$f: not called"
	done
	run awk '$3 == "U" {
		f = $1; sub(/^.*[[\/]/, "", f); sub(/\]?:$/, "", f)
		if ($2 ~ /^mq_(bury_spent|burial_expired)$/ && f != "reap.o" ||
		    $2 == "mq_name_expiry" && f != "reap.o" && f != "look.o" && f != "dead.o")
			print f, $2
	}' "$BATS_TEST_TMPDIR/nm"
	assert_success
	assert_output ""
	# The callers of the reaper read no ttl or max attempts themselves.
	run grep -n 'ttl_ms\|max_attempts\|mq_name_expiry' "$top"/src/core/claim.c \
	    "$top"/src/core/sweep.c "$top"/src/core/depth.c "$top"/src/core/group.c \
	    "$top"/src/core/enqueue.c
	assert_failure 1
}

# One walk of what groups hold (group.c's mq_group_parked) for counts,
# mq-stat, mq_expire and mq-ls (in order, each group's tree walked by
# look.c as new/ is): groups/ is opened and listed in group.c only.
@test "core: groups/ is walked by group.c only: counts, mq-stat, expiry and mq-ls go through mq_group_parked" {
	run grep -ln 'MQ_DIR_GROUPS' "$BATS_TEST_DIRNAME"/../src/core/*.c
	assert_success
	refute_output --regexp '/(stat|sweep|depth|find|claim|dead)\.c$'
	# look.c names paths under groups/ (what it tells), but opens none.
	run grep -n 'MQ_DIR_GROUPS' "$BATS_TEST_DIRNAME"/../src/core/look.c
	refute_output --regexp 'opendirat|dir_each|dir_ordered|openat'
	run grep -ln 'mq_group_parked(' "$BATS_TEST_DIRNAME"/../src/core/*.c
	assert_output --partial /stat.c
	assert_output --partial /sweep.c
	assert_output --partial /depth.c
	assert_output --partial /look.c
}

# mq-dlq lists and finds dead letters through mq-ls's walk (look.c, its
# dead state, buried only), not a listing of dead/ of its own.
@test "core: dead letters are listed and found through look.c's walk" {
	src="$BATS_TEST_DIRNAME/../src"
	run grep -n 'mq_look(' "$src/core/dead.c"
	assert_success
	run grep -n 'MQ_DIR_DEAD\|->dead, DT_\|(sp->dead, [a-z_]*, is_' "$src/core/dead.c"
	assert_failure 1
	run grep -ln 'mq_dead_list\|mq_dead_find' "$src"/tools/*.c
	assert_output --partial /mq-dlq.c
}

# One classification of states: mq-stat counts what mq-ls lists.
@test "core: a message's state is decided in look.c; stat.c counts through it" {
	src="$BATS_TEST_DIRNAME/../src/core"
	run grep -n 'mq_name_expiry\|key <= \|> c->now\|<= c->now' "$src/stat.c"
	assert_failure 1
	run grep -c 'mq_state_waiting\|mq_state_leased' "$src/stat.c"
	[ "$output" -ge 2 ] || fail "stat.c: $output calls"
}

@test "core: each main fits in about two screens (100 lines)" {
	for f in "$BATS_TEST_DIRNAME"/../src/*/mq-*.c; do
		n=$(awk '/^main\(/ { s = NR } s && /^}/ { print NR - s + 1; exit }' "$f")
		[ -n "$n" ] && [ "$n" -le 100 ] || fail "$f: main is ${n:-no} lines"
	done
}

# Every function, mains, engines and the relay alike: a definition starts
# with its name at the start of a line (style(9)) and ends at the first
# "}" there.
@test "core: no function anywhere is over 100 lines" {
	run awk '
	/^[A-Za-z_][A-Za-z_0-9]*\(/ { name = $0; sub(/\(.*/, "", name); s = FNR }
	s && /^}/ {
		if (FNR - s + 1 > 100)
			printf "%s: %s is %d lines\n", FILENAME, name, FNR - s + 1
		s = 0
	}' "$BATS_TEST_DIRNAME"/../src/*/*.c
	assert_success
	assert_output ""
	# The rule sees the functions: a file of the engine has several.
	run grep -c '^[A-Za-z_][A-Za-z_0-9]*(' "$BATS_TEST_DIRNAME/../src/tools/work.c"
	[ "$output" -gt 20 ] || fail "work.c: $output definitions found"
}

# mq-recv's worker mode is two files (src/README): job.c is a job's
# process (found, started, its output passed on, signalled, reaped) and
# knows nothing of the spool; work.c is the loop, which settles the
# messages through the core and makes no process of its own (its
# self-pipe is the core's mq_pipe_cloexec).
@test "core: work.c starts and reaps no process, job.c settles no message" {
	src="$BATS_TEST_DIRNAME/../src/tools"
	assert_file_exist "$src/work.o"
	assert_file_exist "$src/job.o"
	procs='fork|vfork|execve|execv|execvp|execvpe|execl|execle|execlp|fexecve'
	procs="$procs|posix_spawnp?|posix_spawn_.*|pipe|pipe2|dup|dup2|dup3"
	procs="$procs|wait|waitpid|wait3|wait4|waitid|kill|killpg|setpgid"
	run sh -c "nm -P '$src/work.o' | awk '\$2 == \"U\" { print \$1 }' |
	    grep -E '^($procs)$'"
	assert_failure 1
	assert_output ""
	# Of the core, job.c calls only what makes a job's output pipe.
	run sh -c "nm -P '$src/job.o' | awk '\$2 == \"U\" && \$1 ~ /^mq_/ { print \$1 }' |
	    grep -vx mq_pipe_cloexec"
	assert_failure 1
	assert_output ""
	# The rule sees the calls: each object makes those of its own side.
	run sh -c "nm -P '$src/job.o' | awk '\$2 == \"U\" { print \$1 }'"
	assert_line vfork
	assert_line waitpid
	run sh -c "nm -P '$src/work.o' | awk '\$2 == \"U\" { print \$1 }'"
	assert_line mq_receipt_ack
	assert_line mq_job_start
}

# mq-relay (RabbitMQ): broker.c, push.c and pull.c sit above the core as
# work.c does, and only they and mq-relay.c's main speak AMQP; none of
# them is in libmq.a, and no other program is linked with rabbitmq-c.
relay_files="broker push pull mq-relay"

@test "core: mq-relay's files are not in libmq.a, and only they include amqp.h" {
	src="$BATS_TEST_DIRNAME/../src/relay"
	run ar t "$BATS_TEST_DIRNAME/../src/core/libmq.a"
	assert_success
	for f in $relay_files; do
		refute_line "$f.o"
	done
	run grep -lE '#[[:space:]]*include[[:space:]]*[<"](amqp|broker)' \
	    "$BATS_TEST_DIRNAME"/../src/*/*.[ch]
	for f in $output; do
		case "${f##*/}" in
		broker.h|broker.c|push.c|pull.c|mq-relay.c)
			[ "${f%/*}" -ef "$src" ] || fail "$f: not in src/relay" ;;
		*) fail "$f speaks AMQP" ;;
		esac
	done
	# Nor do push.c and pull.c touch a state directory themselves.
	run grep -nE '\bsp(\.|->)(fd|tmp|new|cur|dead|reason|last)\b|\.bucket\b|\b(openat|renameat|unlinkat|mq_spool_spares)\(' \
	    "$src"/broker.c "$src"/push.c "$src"/pull.c
	assert_failure 1
	assert_output ""
}

@test "core: mq-relay's layers: the core calls none of them, broker.c neither push nor pull" {
	src="$BATS_TEST_DIRNAME/../src/relay"
	if ! pkg-config --exists librabbitmq; then
		# Not built at all without rabbitmq-c.
		assert_file_not_exist "$BATS_TEST_DIRNAME/../bin/mq-relay"
		return
	fi
	for f in $relay_files; do
		assert_file_exist "$src/$f.o"
	done
	# What the core uses, none of it the relay's.
	run sh -c "nm -P '$src/../core/libmq.a' | awk '\$2 == \"U\" { print \$1 }' |
	    grep -E '^(mq_broker_|mq_push$|mq_pull$)'"
	assert_failure 1
	run sh -c "nm -P '$src/broker.o' | awk '\$2 == \"U\" { print \$1 }' |
	    grep -E '^(mq_push|mq_pull)$'"
	assert_failure 1
	for f in push pull; do
		run sh -c "nm -P '$src/$f.o' | awk '\$2 == \"U\" { print \$1 }' |
		    grep -E '^(mq_push|mq_pull)$'"
		assert_failure 1
	done
}

@test "core: only mq-relay is linked with rabbitmq-c" {
	bin="$BATS_TEST_DIRNAME/../bin"
	for f in "$bin"/mq-*; do
		[ "${f##*/}" != mq-relay ] || continue
		run readelf -d "$f"
		assert_success
		refute_output --partial librabbitmq
	done
	if pkg-config --exists librabbitmq; then
		run readelf -d "$bin/mq-relay"
		assert_success
		assert_output --partial librabbitmq
	fi
}

# make mutate is not part of make check: a change of the code that leaves
# a mutant's text behind is caught here instead, when it is made.
@test "core: the mutants of make mutate still fit the code: each one's text once in its file, its test files there" {
	run -0 --separate-stderr python3 "$BATS_TEST_DIRNAME/mutate/run" --check
	assert_equal "$stderr" ""
	run -0 python3 "$BATS_TEST_DIRNAME/mutate/run" --list
	[ "${#lines[@]}" -ge 24 ]
}

@test "core: make mutate's check finds a mutant whose text is gone, or whose test file is" {
	t=$BATS_TEST_TMPDIR/tree
	mkdir -p "$t/tests/mutate" "$t/src"
	cp "$BATS_TEST_DIRNAME/mutate/run" "$t/tests/mutate/"
	printf 'int a;\nint a;\nint b;\n' >"$t/src/x.c"
	touch "$t/tests/x.bats"
	printf '%s\n' 'mutant twice' 'file src/x.c' 'from int a;' 'to int c;' \
	    'test tests/x.bats' '' 'mutant gone' 'file src/x.c' 'from int z;' \
	    'to int c;' 'test tests/x.bats' '' 'mutant fine' 'file src/x.c' \
	    'from int a;\nint b;' 'to int b;' 'test tests/x.bats f' '' \
	    'mutant untested' 'file src/x.c' 'from int b;' 'to int c;' \
	    'test tests/y.bats' >"$t/tests/mutate/mutants"
	run -1 --separate-stderr python3 "$t/tests/mutate/run" --check
	assert_equal "$stderr" "tests/mutate/mutants:1: twice: STALE: from found 2 times in src/x.c, not once
tests/mutate/mutants:7: gone: STALE: from found 0 times in src/x.c, not once
tests/mutate/mutants:19: untested: STALE: tests/y.bats: no such test file"
}
