"""OutputCapture (runtime/local/entry.py): each execution's capture holds exactly what was
written while it ran, also when an earlier execution printed and a later one printed nothing
(the capture file is truncated only after output was captured)."""

import os
import subprocess
import sys

from runtime.local.entry import OutputCapture


def test_each_capture_holds_only_its_own_output():
    cap = OutputCapture()
    try:
        cap.start()
        os.write(1, b"one\n")
        os.write(2, b"err one\n")
        assert cap.stop() == "one\nerr one\n"
        cap.start()
        assert cap.stop() == ""  # nothing printed: nothing left over from the first
        cap.start()
        subprocess.run([sys.executable, "-c", "print('two')"], check=True)  # a child process
        assert cap.stop() == "two\n"
        cap.start()
        assert cap.stop() == ""
        cap.start()
        os.write(1, b"3")
        assert cap.stop() == "3"
    finally:
        if cap.active:
            cap.stop()
