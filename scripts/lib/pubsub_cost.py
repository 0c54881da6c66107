# Redis CPU per SPUBLISH of a 300-byte message (pipelined by redis-benchmark) with 0, 1 and 20 subscribers reading,
# and per extra subscriber: what the bus costs Redis per delivered copy (docs/scaling.md). Usage: pubsub_cost.py PORT
# Prints: "<0 subs µs> <1 sub µs> <20 subs µs> <µs per extra subscriber>".
import socket, subprocess, sys, threading, time, os
port = int(sys.argv[1])
pid = int(subprocess.check_output(["redis-cli","-p",str(port),"info","server"]).decode().split("process_id:")[1].split()[0])
def cpu():
    f = open("/proc/%d/stat" % pid).read().split(")")[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def run(subs, n=200000):
    socks = []
    for _ in range(subs):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"*2\r\n$10\r\nSSUBSCRIBE\r\n$15\r\nst:{a:u1}:bus:x\r\n")
        s.recv(100)
        socks.append(s)
    stop = False
    def drain(s):
        s.settimeout(0.5)
        while not stop:
            try:
                if not s.recv(1 << 20): break
            except socket.timeout:
                pass
    threads = [threading.Thread(target=drain, args=(s,)) for s in socks]
    for t in threads: t.start()
    c0 = cpu()
    subprocess.run(["redis-benchmark","-p",str(port),"-q","-n",str(n),"-c","16","-P","16","spublish","st:{a:u1}:bus:x","x"*300], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    c1 = cpu()
    stop = True
    for t in threads: t.join()
    for s in socks: s.close()
    return (c1 - c0) / n * 1e6
a = run(0); b = run(1); c = run(20)
print("%.2f %.2f %.2f %.2f" % (a, b, c, (c - b) / 19))
