#!/usr/bin/python3
"""A NOTIFY_SOCKET for tests: binds an AF_UNIX datagram socket and prints every datagram it receives."""
import socket, sys, os
p = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(p)
print("ready", flush=True)
while True:
    d = s.recv(4096)
    print(d.decode(), flush=True)
