#!/bin/sh
# One job of the worker service: the body (a path to an image) on standard
# input, the message in MQ_ID and MQ_ATTEMPT.  The result is named by the
# message ID, so a message delivered twice does its work once; it is
# written to a temporary name and renamed, so a killed job leaves no half
# of a result behind.  Exit 65 for input that can never work: mq-recv
# dead-letters it at once instead of retrying.
set -eu
out=${1:?usage: thumbnail-job.sh OUTDIR}/$MQ_ID.thumb
[ -e "$out" ] && exit 0
src=$(cat)
if [ ! -r "$src" ]; then
	echo "no such image: $src" >&2
	exit 65
fi
# A real worker would run: convert "$src" -resize 200x200 "$out.tmp"
cp "$src" "$out.tmp"
mv "$out.tmp" "$out"
