# bash completion for the mq tools: options, spool directories after -d,
# files for mq-send, a command after mq-recv's --, subcommands and dead
# letter IDs for mq-dlq, the IDs of the spool (mq-ls) for mq-show and
# mq-rm, the direction (push, pull) for mq-relay; and for the front
# command mq, the tools, then what each tool's own completion offers.
# Installed once per program name, so that bash-completion loads it for
# whichever is completed first.

# The options each tool takes, as in its --help.
_mq_options() {
	case $1 in
	mq-send) echo "-0 -l -S -v -d -D -g -k -p -w --ttl -h --help -V --version" ;;
	mq-recv) echo "-0 -v -d -n -t -m -w -P --tag --timeout --backoff --backoff-max --drain --progress --once -h --help -V --version" ;;
	mq-ack) echo "-0 -v -d -r -x -e --reason -h --help -V --version" ;;
	mq-sweep) echo "-v -d -m -i -h --help -V --version" ;;
	mq-dlq) echo "-0 -v -d -w --to --all --json --raw --reason --older-than --newer-than --rate -h --help -V --version" ;;
	mq-stat) echo "-b -i -v -d --json --prometheus -h --help -V --version" ;;
	mq-conf) echo "-f -v -d -h --help -V --version" ;;
	mq-show) echo "-0 --raw -v -d -h --help -V --version" ;;
	mq-rm) echo "-0 -f -v -d --all -h --help -V --version" ;;
	mq-ls) echo "-l -v -d -s --json -h --help -V --version" ;;
	mq-log) echo "-f -v -d -o -a --json --since --kind -h --help -V --version" ;;
	mq-top) echo "-b -v -i -n -d -h --help -V --version" ;;
	mq-relay) echo "-1 -v -d -n -q --max-bytes -h --help -V --version" ;;
	esac
}

# mq-conf: its keys as "key=", then the values of the keys that have
# words for values.  bash splits "key=value" at "=" (COMP_WORDBREAKS), so
# the key may be two words back; whole when "=" does not split.
_mq_conf() {
	local cur=$1 prev=$2 key="" val="" pre="" w
	if [ "$cur" = "=" ]; then
		key=$prev
	elif [ "$prev" = "=" ] && [ "$COMP_CWORD" -ge 2 ]; then
		key=${COMP_WORDS[COMP_CWORD - 2]} val=$cur
	elif [[ $cur == *=* ]]; then
		key=${cur%%=*} val=${cur#*=} pre=$key=
	fi
	case $key in
	"")
		mapfile -t COMPREPLY < <(compgen -W "max-attempts= lease= max-depth= overflow= ttl= paused= dedup-window= log-size= log-age= keep-output= once-window=" -- "$cur")
		compopt -o nospace 2>/dev/null
		return ;;
	overflow) w="reject drop-oldest" ;;
	paused) w="yes no" ;;
	*) return ;;
	esac
	mapfile -t COMPREPLY < <(compgen -P "$pre" -W "$w" -- "$val")
}

_mq() {
	local cmd cur prev i sub="" spool=() dashdash=0
	cmd=${COMP_WORDS[0]##*/}
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	COMPREPLY=()
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--) dashdash=$i; break ;;
		-d) spool=(-d "${COMP_WORDS[i + 1]}") ;;
		ls | show | redrive | purge) [ "$cmd" = mq-dlq ] && [ -z "$sub" ] && sub=${COMP_WORDS[i]} ;;
		esac
	done
	# After mq-recv's --: a command, then its arguments as files.
	if [ "$dashdash" -gt 0 ]; then
		if [ $((COMP_CWORD - dashdash)) -eq 1 ]; then
			mapfile -t COMPREPLY < <(compgen -c -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		fi
		return
	fi
	case $prev in
	-d)
		mapfile -t COMPREPLY < <(compgen -d -- "$cur")
		return ;;
	-t)
		return ;;
	--to)
		if [ "$cmd" = mq-dlq ]; then
			mapfile -t COMPREPLY < <(compgen -d -- "$cur")
		fi
		return ;;
	-s)
		# mq-ls's states.
		[ "$cmd" = mq-ls ] && mapfile -t COMPREPLY < <(compgen -W "expired ready delayed blocked inflight orphaned dead" -- "$cur")
		return ;;
	-p)
		# mq-send's priorities, 0 (the default) to 9.
		[ "$cmd" = mq-send ] && mapfile -t COMPREPLY < <(compgen -W "0 1 2 3 4 5 6 7 8 9" -- "$cur")
		return ;;
	--kind)
		[ "$cmd" = mq-log ] && mapfile -t COMPREPLY < <(compgen -W "send claim ack release orphan expire dead redrive remove purge conf job" -- "$cur")
		return ;;
	-n | -m | -w | -i | -D | -g | -k | -r | -e | -x | -P | -q | -o | -a | --max-bytes | --timeout | --backoff | --backoff-max | --ttl | --since)
		return ;;
	esac
	# mq-relay: the direction first, then its options; the URIs are not
	# completed.
	if [ "$cmd" = mq-relay ]; then
		if [ "$COMP_CWORD" -eq 1 ]; then
			if [[ $cur == -* ]]; then
				mapfile -t COMPREPLY < <(compgen -W "-h --help -V --version" -- "$cur")
			else
				mapfile -t COMPREPLY < <(compgen -W "push pull" -- "$cur")
			fi
		elif [[ $cur == -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W "$(_mq_options "$cmd")" -- "$cur")
		fi
		return
	fi
	if [ "$cmd" = mq-dlq ]; then
		case $sub in
		"")
			if [[ $cur == -* ]]; then
				mapfile -t COMPREPLY < <(compgen -W "-v -d -h --help -V --version" -- "$cur")
			else
				mapfile -t COMPREPLY < <(compgen -W "ls show redrive purge" -- "$cur")
			fi ;;
		ls)
			case $prev in
			--reason | --older-than | --newer-than) ;;
			*) mapfile -t COMPREPLY < <(compgen -W "--json --reason --older-than --newer-than" -- "$cur") ;;
			esac ;;
		show | redrive | purge)
			case $prev in
			# A regex, a duration, a rate: nothing to offer.
			--reason | --older-than | --newer-than | --rate) return ;;
			esac
			if [[ $cur == -* ]]; then
				case $sub in
				show) mapfile -t COMPREPLY < <(compgen -W "-0 --raw" -- "$cur") ;;
				redrive) mapfile -t COMPREPLY < <(compgen -W "-0 -w --all --to --rate --reason --older-than --newer-than" -- "$cur") ;;
				purge) mapfile -t COMPREPLY < <(compgen -W "-0 --all --reason --older-than --newer-than" -- "$cur") ;;
				esac
			else
				mapfile -t COMPREPLY < <(compgen -W "$(mq-dlq "${spool[@]}" ls 2>/dev/null | cut -f 1)" -- "$cur")
			fi ;;
		esac
		return
	fi
	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_mq_options "$cmd")" -- "$cur")
		return
	fi
	if [ "$cmd" = mq-conf ]; then
		_mq_conf "$cur" "$prev"
		return
	fi
	case $cmd in
	mq-send | mq-ack) mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
	mq-show | mq-rm | mq-log)
		mapfile -t COMPREPLY < <(compgen -W "$(mq-ls "${spool[@]}" 2>/dev/null | cut -f 1)" -- "$cur") ;;
	# Spools as operands, as -d.
	mq-stat | mq-ls | mq-top) mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
	esac
}

# mq TOOL ...: completed as mq-TOOL ... is, the words shifted by one.
_mq_front() {
	local tools="send recv ack sweep dlq stat conf ls show rm log top relay"
	local cur=${COMP_WORDS[COMP_CWORD]} tool=${COMP_WORDS[1]}
	COMPREPLY=()
	if [ "$COMP_CWORD" -eq 1 ]; then
		if [[ $cur == -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W "-h --help -V --version" -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W "$tools help" -- "$cur")
		fi
		return
	fi
	if [ "$tool" = help ]; then
		[ "$COMP_CWORD" -eq 2 ] && mapfile -t COMPREPLY < <(compgen -W "$tools" -- "$cur")
		return
	fi
	case " $tools " in
	*" $tool "*)
		local -a COMP_WORDS=("mq-$tool" "${COMP_WORDS[@]:2}")
		local COMP_CWORD=$((COMP_CWORD - 1))
		_mq ;;
	esac
}

complete -F _mq mq-send mq-recv mq-ack mq-sweep mq-dlq mq-stat mq-conf mq-ls \
    mq-show mq-rm mq-log mq-top mq-relay
complete -F _mq_front mq
