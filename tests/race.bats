load helper

# Workers that claim 64 at a time, record what they got and ack it all.
batch_worker() { # log
	local f="$1.batch"
	while mq-recv -n 64 -t 600 >"$f"; do
		cat "$f" >>"$1"
		mq-ack <"$f" 2>>"$1.err" || echo "ack failed: $?" >>"$1.err"
	done
}

check_exactly_once() { # n
	cat "$BATS_TEST_TMPDIR"/w.? | sed 's,.*/,,; s/,.*//' | sort >"$BATS_TEST_TMPDIR/ids"
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/ids")" "$1"
	assert_equal "$(uniq -d "$BATS_TEST_TMPDIR/ids" | wc -l)" 0
	assert_equal "$(cat "$BATS_TEST_TMPDIR"/w.?.err 2>/dev/null | wc -l)" 0
	assert_equal "$(count new)$(count cur)$(count dead)" 000
}

@test "race: 8 workers over 20000 messages, each processed exactly once, no lease lost" {
	seq 1 20000 | mq-send -l -S >/dev/null
	for i in 1 2 3 4 5 6 7 8; do batch_worker "$BATS_TEST_TMPDIR/w.$i" & done
	wait
	check_exactly_once 20000
}

@test "race: the same with mq-sweep -i running alongside" {
	seq 1 20000 | mq-send -l -S >/dev/null
	mq-sweep -i 0.05 &
	sweeper=$!
	for i in 1 2 3 4 5 6 7 8; do batch_worker "$BATS_TEST_TMPDIR/w.$i" & done
	for i in 1 2 3 4 5 6 7 8; do wait %$((i + 1)); done
	kill "$sweeper"
	check_exactly_once 20000
}

@test "race: with leases shorter than the work, a stale ack never deletes a message another worker holds" {
	seq 1 300 | mq-send -l -S >/dev/null
	for i in 1 2 3 4 5 6 7 8; do
		(
			while r=$(mq-recv -t 0.2 -m 1000); do
				echo "$r" >>"$BATS_TEST_TMPDIR/claims"
				# Half the jobs outlive their lease.
				[ $((RANDOM % 2)) -eq 0 ] && sleep 0.3
				if mq-ack "$r" 2>/dev/null; then
					echo "$r" >>"$BATS_TEST_TMPDIR/acked"
				else
					echo "$? $r" >>"$BATS_TEST_TMPDIR/stale"
				fi
			done
		) &
	done
	wait
	assert_equal "$(count new)$(count cur)$(count dead)" 000
	# Every message was acked exactly once ...
	sed 's,.*/,,; s/,.*//' "$BATS_TEST_TMPDIR/acked" | sort >"$BATS_TEST_TMPDIR/ids"
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/ids")" 300
	assert_equal "$(uniq -d "$BATS_TEST_TMPDIR/ids" | wc -l)" 0
	# ... a failed ack was always a lost lease (3) ...
	if [ -e "$BATS_TEST_TMPDIR/stale" ]; then
		assert_equal "$(cut -d' ' -f1 "$BATS_TEST_TMPDIR/stale" | sort -u)" 3
	fi
	# ... and the ack that counted was by the message's last claim: no
	# older receipt ever deleted a newer holder's message.
	sed 's,.*/,,' "$BATS_TEST_TMPDIR/claims" | unheld | awk -F, '
	    { if ($3 > last[$1]) last[$1] = $3 }
	    END { for (id in last) print id "," last[id] }' | sort >"$BATS_TEST_TMPDIR/last"
	sed 's,.*/,,' "$BATS_TEST_TMPDIR/acked" | unheld | awk -F, '{ print $1 "," $3 }' |
	    sort >"$BATS_TEST_TMPDIR/ackby"
	run diff "$BATS_TEST_TMPDIR/last" "$BATS_TEST_TMPDIR/ackby"
	assert_success
}
