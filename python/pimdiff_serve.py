"""Serve pimdiff's persistent compiler protocol from Python, with the standard library only.

pimdiff starts the server once per job (``pimdiff hunt --compiler-protocol serve
--compiler-cmd "python3 mycc_server.py"``) and sends one JSON request per line on its standard
input; the server compiles the case and answers one JSON line on its standard output. This
module does the protocol; a compiler only supplies the function that compiles one case::

    import pimdiff_serve

    def compile_case(case_dir, out_dir):
        ...  # read case_dir/case.json and the .npy tensors, write the bundle into out_dir
        # raise pimdiff_serve.Unsupported("not enough crossbar arrays: 9 needed, 2 available")
        # to decline a case; any other exception is a compile error of that case.

    pimdiff_serve.serve(compile_case)

While ``compile_case`` runs, ``sys.stdout`` is standard error, so a stray ``print`` cannot break
the protocol. The protocol itself (request and answer fields, deadlines, what a crash, a hang
or a garbage line becomes) is in ``docs/serve-protocol.md``.
"""

import contextlib
import json
import sys

PROTOCOL_VERSION = 1
"""The protocol version this module speaks (the ``protocol`` field of every request)."""

REQUEST_LINE_LIMIT = 64 << 10
"""The longest request line read, in bytes (a request names two paths)."""


class Unsupported(Exception):
    """Raised by the compile function to decline a case; its message is the reason.

    A reason of the form ``... N needed, M available ...`` is a claim pimdiff checks against the
    case (a refuted claim is a ``bogus-unsupported`` finding).
    """


class ProtocolError(Exception):
    """A request line that is not a request of this protocol version."""


def parse_request(line):
    """The ``(id, case_dir, out_dir)`` of one request line (bytes); ``ProtocolError`` if it is
    not a request of protocol version 1."""
    if len(line) > REQUEST_LINE_LIMIT:
        raise ProtocolError("a request line longer than %d bytes" % REQUEST_LINE_LIMIT)
    try:
        request = json.loads(line)
    except ValueError as e:
        raise ProtocolError("not JSON (%s): %r" % (e, line[:200]))
    if not isinstance(request, dict):
        raise ProtocolError("not a JSON object: %r" % line[:200])
    if request.get("protocol") != PROTOCOL_VERSION:
        raise ProtocolError(
            "protocol version %r requested, this server speaks %d"
            % (request.get("protocol"), PROTOCOL_VERSION)
        )
    fields = (request.get("id"), request.get("case"), request.get("out"))
    if not isinstance(fields[0], int) or not all(isinstance(f, str) for f in fields[1:]):
        raise ProtocolError("a request needs an integer id and string case and out: %r" % line[:200])
    return fields


def answer(request_id, compile_fn, case_dir, out_dir):
    """The answer (a dict) to one request: compiled, unsupported with the reason, or error with
    the exception's type and message."""
    try:
        with contextlib.redirect_stdout(sys.stderr):
            compile_fn(case_dir, out_dir)
    except Unsupported as e:
        return {"id": request_id, "status": "unsupported", "reason": str(e)}
    except Exception as e:  # noqa: BLE001 - every failure of the compiler is an answer
        return {"id": request_id, "status": "error", "message": "%s: %s" % (type(e).__name__, e)}
    return {"id": request_id, "status": "compiled"}


def serve(compile_fn, stdin=None, stdout=None):
    """Answers requests until the end of ``stdin`` (default: standard input), then returns 0.

    A line that is not a request ends the server with exit status 2 and the problem on standard
    error (pimdiff never sends one; it is a misuse, not a case's failure).
    """
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout
    while True:
        line = stdin.readline(REQUEST_LINE_LIMIT + 1)
        if not line:
            return 0
        try:
            request_id, case_dir, out_dir = parse_request(line)
        except ProtocolError as e:
            print("pimdiff_serve: %s" % e, file=sys.stderr)
            sys.exit(2)
        reply = answer(request_id, compile_fn, case_dir, out_dir)
        stdout.write(json.dumps(reply) + "\n")
        stdout.flush()
