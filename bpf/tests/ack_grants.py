#!/usr/bin/env python3
"""Release the packets routed into a TUN device in bursts, one burst every scheduling unit.

A cellular uplink sends what it has at each grant, so the sender receives ACKs in sets a
multiple of the scheduling unit (SU) apart. Routed through this device, the ACK path of a
veth test network shows that pattern, which César's SU estimation looks for.

Run it (root) in the namespace that forwards the ACKs, then route the ACKs into it and
let what it writes back take the normal route (policy routing by input interface):

    ip netns exec MID python3 ack_grants.py --su-ms 5 --seconds 60 --dev bpfalgs-t0 &
    ip -n MID link set bpfalgs-t0 up
    ip -n MID route add SENDER_IP/32 dev bpfalgs-t0
    ip -n MID rule add iif bpfalgs-t0 lookup 100
    ip -n MID route add SENDER_NET dev VETH_TO_SENDER table 100
    ip netns exec MID sysctl -w net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.bpfalgs-t0.rp_filter=0

The device disappears when the program exits. Timing is Python's: grants land within
about a millisecond of schedule.
"""

import argparse
import fcntl
import os
import select
import struct
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--su-ms", type=float, default=5.0, help="scheduling unit, ms")
    ap.add_argument("--seconds", type=float, default=60.0, help="run time")
    ap.add_argument("--dev", default="bpfalgs-t0", help="TUN device to create")
    args = ap.parse_args()

    su = args.su_ms / 1000.0
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", args.dev.encode(), IFF_TUN | IFF_NO_PI))
    os.set_blocking(fd, False)
    print(f"{args.dev}: releasing every {args.su_ms} ms", flush=True)

    held: list[bytes] = []
    grant = time.monotonic() + su
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], max(0.0, grant - time.monotonic()))
        if ready:
            while True:
                try:
                    held.append(os.read(fd, 65536))
                except BlockingIOError:
                    break
        now = time.monotonic()
        if now >= grant:
            for packet in held:
                os.write(fd, packet)
            held.clear()
            while grant <= now:
                grant += su


if __name__ == "__main__":
    main()
