# Sourced by scripts/bench and scripts/bench-connect.
# listen_overflows: connects the kernel dropped so far because a listen backlog was full (the whole machine's TcpExt
# ListenOverflows, /proc/net/netstat). The client's TCP sends each again only after 1 s, 3 s, 7 s, so even a few make
# a connect p99 whole seconds.
listen_overflows() {
    awk '/^TcpExt:/ {if (!n) {split($0, names); n = 1} else {for (i = 2; i <= NF; i++) if (names[i] == "ListenOverflows") print $i}}' /proc/net/netstat
}
