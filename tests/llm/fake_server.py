"""Starts tests/llm/fake_llm_server.py for the Python LLM tests and
benchmarks and waits for its port.

    server, url = start(src, work, script=None)   # url: http://127.0.0.1:PORT/v1

The server logs to WORK/server.log and writes its port to WORK/port; a
script (a dict) is written to WORK/script.json first. The caller kills
`server` when done.
"""
import json
import os
import subprocess
import sys
import time


def start(src, work, script=None):
    cmd = [sys.executable, os.path.join(src, "tests/llm/fake_llm_server.py"),
           "--port-file", os.path.join(work, "port"), "--log", os.path.join(work, "server.log")]
    if script is not None:
        with open(os.path.join(work, "script.json"), "w") as f:
            json.dump(script, f)
        cmd += ["--script", os.path.join(work, "script.json")]
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port_file = os.path.join(work, "port")
    for _ in range(200):
        if os.path.exists(port_file) and open(port_file).read().strip():
            break
        if server.poll() is not None:
            sys.exit("the fake LLM server exited at start (%d)" % server.returncode)
        time.sleep(0.05)
    else:
        server.kill()
        sys.exit("the fake LLM server wrote no port in 10 s")
    return server, "http://127.0.0.1:%s/v1" % open(port_file).read().strip()
