#!/usr/bin/python3
"""The unauthenticated surface under a flood: --attempts grpc.health.v1.Health/Watch calls (no
token, as anyone on the host may make them) spread over --channels TCP connections to a fresh
service, all at once and held open for --hold seconds. Reports how many were served (their first
SERVING message) and how many refused (RESOURCE_EXHAUSTED), how long the flood took, the
service's RSS before, at its peak (sampled every 50 ms) and after, and GetStatus through `wctctl
status` during the flood next to before it. Medians of --rounds, each on a fresh service.

Run from the repository, with a build that has the service and wctctl:
    cmake --build build/default --target wctmond wctmon wctctl
    scripts/bench/health_flood.py --build build/default [--attempts 25000]
"""
import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from api import ApiService  # noqa: E402
from service import RssPeak, proc_status, stop  # noqa: E402

WATCH = "/grpc.health.v1.Health/Watch"


async def flood(target, attempts, channels, hold):
    """Opens `attempts` Watch calls over `channels` channels; returns (served, refused, other)."""
    opened = [grpc.aio.insecure_channel(target) for _ in range(channels)]
    outcomes = {"served": 0, "refused": 0, "other": 0}

    async def one(channel):
        call = channel.unary_stream(WATCH)(b"")
        try:
            await asyncio.wait_for(call.read(), timeout=hold + 30)
            outcomes["served"] += 1
            await asyncio.sleep(hold)
        except grpc.aio.AioRpcError as e:
            key = "refused" if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED else "other"
            outcomes[key] += 1
        except asyncio.TimeoutError:
            outcomes["other"] += 1
        finally:
            call.cancel()

    await asyncio.gather(*(one(opened[i % channels]) for i in range(attempts)))
    for channel in opened:
        await channel.close()
    return outcomes


def status_ms(build, service):
    start = time.monotonic()
    subprocess.run([os.path.join(build, "client/wctctl"), "--server", service.tcp,
                    "--token-file", service.reader_token, "status"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.monotonic() - start) * 1000


def round_once(args):
    with tempfile.TemporaryDirectory() as state:
        service = ApiService(args.build, state, "--tag=health-flood-" + os.path.basename(state))
        try:
            pid = service.proc.pid
            time.sleep(1)
            before_rss = proc_status(pid, "VmRSS")
            before_status = status_ms(args.build, service)
            peak = RssPeak(pid, every=0.05)
            during = []

            def probe():
                time.sleep(args.hold / 2)
                during.append(status_ms(args.build, service))

            prober = threading.Thread(target=probe)
            prober.start()
            start = time.monotonic()
            outcomes = asyncio.run(flood(service.tcp, args.attempts, args.channels, args.hold))
            took = time.monotonic() - start
            prober.join()
            time.sleep(1)
            peak_rss = peak.stop()
            after_rss = proc_status(pid, "VmRSS")
            alive = service.proc.poll() is None
        finally:
            stop(service.proc)
    return {"served": outcomes["served"], "refused": outcomes["refused"],
            "other": outcomes["other"], "seconds": took, "rss_before_mb": before_rss / 1024,
            "rss_peak_mb": peak_rss / 1024, "rss_after_mb": after_rss / 1024,
            "status_before_ms": before_status, "status_during_ms": during[0] if during else None,
            "alive": alive}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build/default")
    parser.add_argument("--attempts", type=int, default=25000)
    parser.add_argument("--channels", type=int, default=100)
    parser.add_argument("--hold", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rounds = [round_once(args) for _ in range(args.rounds)]
    print(f"{args.attempts} Watch calls over {args.channels} connections, held {args.hold} s; "
          f"medians of {args.rounds} rounds (min-max)")
    for key in ("served", "refused", "other", "seconds", "rss_before_mb", "rss_peak_mb",
                "rss_after_mb", "status_before_ms", "status_during_ms"):
        values = [r[key] for r in rounds if r[key] is not None]
        print(f"  {key:18} {statistics.median(values):10.1f}  ({min(values):.1f}-{max(values):.1f})")
    print(f"  service alive after each round: {all(r['alive'] for r in rounds)}")


if __name__ == "__main__":
    main()
