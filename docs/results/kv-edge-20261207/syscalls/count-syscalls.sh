#!/bin/bash
# usage: count-syscalls.sh NAME PORT PIPE: counts the system calls of the server
# (/tmp/kv-NAME, or redis-server for NAME=redis) and of redis-benchmark over one
# 300k-GET run; writes /tmp/perf-srv-NAME.txt and /tmp/perf-cli-NAME.txt (kept
# here as server-NAME.perf, client-NAME.perf; /tmp/kv-new was 54711ad's coact-kv).
# The tracepoints cost time per call: use these files for counts, not CPU time.
NAME=$1; PORT=$2; P=$3
EV='syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait2,syscalls:sys_enter_epoll_ctl,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_sendto,syscalls:sys_enter_futex,task-clock,context-switches'
case $NAME in
  redis) redis-server --port $PORT --save '' --appendonly no >/dev/null 2>&1 & ;;
  *) COACT_WORKERS=2 /tmp/kv-$NAME --port $PORT --shards 2 >/dev/null 2>&1 & ;;
esac
S=$!
sleep 0.5
redis-benchmark -p $PORT -t get -n 20000 -c 50 -P $P -q >/dev/null
perf stat -x, -e $EV -p $S -o /tmp/perf-srv-$NAME.txt &
T=$!
perf stat -x, -e $EV -o /tmp/perf-cli-$NAME.txt redis-benchmark -p $PORT -t get -n 300000 -c 50 -P $P -q 2>&1 | tail -1 | tr '\r' '\n' | tail -1
kill -INT $T; wait $T 2>/dev/null
kill -TERM $S; wait $S 2>/dev/null
echo "server:"; grep -v '^#' /tmp/perf-srv-$NAME.txt | grep -v '^$' | awk -F, '{printf "  %s %s\n",$3,$1}'
echo "client:"; grep -v '^#' /tmp/perf-cli-$NAME.txt | grep -v '^$' | awk -F, '{printf "  %s %s\n",$3,$1}'
