"""The peer: python3-dirq's QueueSimple doing mq's workloads in-process.

    dirq-bench.py add N DIR    add N small messages
    dirq-bench.py get DIR      lock + get + remove every message

Prints the rate in messages per second.
"""
import sys
import time

from dirq.QueueSimple import QueueSimple


def main():
    mode = sys.argv[1]
    if mode == "add":
        n = int(sys.argv[2])
        q = QueueSimple(sys.argv[3])
        t0 = time.monotonic()
        for i in range(n):
            q.add("%d\n" % (i + 1))
        t1 = time.monotonic()
    else:
        q = QueueSimple(sys.argv[2])
        n = 0
        t0 = time.monotonic()
        for name in q:
            if q.lock(name):
                q.get(name)
                q.remove(name)
                n += 1
        t1 = time.monotonic()
    print("%.0f" % (n / (t1 - t0)))


main()
