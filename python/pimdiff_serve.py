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

While ``serve`` runs, ``sys.stdout`` is standard error, so a stray ``print`` cannot break the
protocol; standard output carries answer lines only. A banner printed before ``serve`` is called
would be read as the first answer: pimdiff then stops the hunt before it starts, naming the fix
(print it to ``sys.stderr``). An exception becomes an ``error`` answer that also carries the exception's type
and its traceback's frames (``exception``); ``serve(..., frames_root=DIR)`` keeps the frames of
the compiler's own source tree, named relative to it. The protocol itself (request and answer
fields, deadlines, what a crash, a hang or a garbage line becomes) is in
``docs/serve-protocol.md``.
"""

import contextlib
import json
import os
import sys
import traceback

PROTOCOL_VERSION = 1
"""The protocol version this module speaks (the ``protocol`` field of every request)."""

REQUEST_LINE_LIMIT = 64 << 10
"""The longest request line read, in bytes (a request names two paths)."""

ANSWER_LINE_LIMIT = 60 << 10
"""The longest answer line written, in bytes: pimdiff refuses one over 64 KiB. An error answer
over it loses its frames, then its extra fields."""

MESSAGE_LIMIT = 2000
"""The longest exception message (characters) an error answer carries; longer ones are cut."""

FRAME_LIMIT = 40
"""The most traceback frames an error answer carries (the innermost ones)."""


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


def _cut(text, limit):
    return text if len(text) <= limit else text[:limit] + "... (%d characters cut)" % (len(text) - limit)


def _short_path(path):
    """PATH relative to the longest ``sys.path`` entry holding it (``onnx/helper.py`` for a file
    in site-packages), else as it is."""
    real = os.path.realpath(path)
    best = None
    for entry in sys.path:
        base = os.path.realpath(entry or os.curdir)
        if real.startswith(base + os.sep) and (best is None or len(base) > len(best)):
            best = base
    return os.path.relpath(real, best) if best else path


def describe_exception(e, frames_root=None):
    """The ``exception`` field of an error answer: ``type`` (the class name), ``module`` (the
    class's module), ``message`` (cut at ``MESSAGE_LIMIT``), ``frames`` (``{"file", "line",
    "function"}``, innermost last: with ``frames_root``, only the frames of files under it,
    relative to it; else every frame but this module's own), ``frames_cut`` (frames left out by
    ``FRAME_LIMIT``) and ``raised_in`` (the innermost frame of all, wherever it is, with its
    file relative to its ``sys.path`` entry)."""
    root = os.path.realpath(frames_root) if frames_root else None
    here = os.path.realpath(__file__)
    frames = []
    raised_in = None
    for summary in traceback.extract_tb(e.__traceback__):
        real = os.path.realpath(summary.filename)
        raised_in = {"file": _short_path(summary.filename), "line": summary.lineno,
                     "function": summary.name}
        if root is not None:
            if not real.startswith(root + os.sep):
                continue
            name = os.path.relpath(real, root)
        elif real == here:
            continue
        else:
            name = summary.filename
        frames.append({"file": name, "line": summary.lineno, "function": summary.name})
    cut = max(0, len(frames) - FRAME_LIMIT)
    return {
        "type": type(e).__name__,
        "module": type(e).__module__,
        "message": _cut(str(e), MESSAGE_LIMIT),
        "frames": frames[cut:],
        "frames_cut": cut,
        "raised_in": raised_in,
    }


def answer(request_id, compile_fn, case_dir, out_dir, frames_root=None):
    """The answer (a dict) to one request: compiled, unsupported with the reason, or error with
    the exception's type and message (``message``) and its description (``exception``, see
    ``describe_exception``)."""
    try:
        with contextlib.redirect_stdout(sys.stderr):
            compile_fn(case_dir, out_dir)
    except Unsupported as e:
        return {"id": request_id, "status": "unsupported", "reason": str(e)}
    except Exception as e:  # noqa: BLE001 - every failure of the compiler is an answer
        return {"id": request_id, "status": "error",
                "message": _cut("%s: %s" % (type(e).__name__, e), MESSAGE_LIMIT),
                "exception": describe_exception(e, frames_root)}
    return {"id": request_id, "status": "compiled"}


def answer_line(reply):
    """REPLY as one JSON line, at most ``ANSWER_LINE_LIMIT`` bytes: an error answer over it
    keeps only ``id``, ``status``, ``message`` and the exception's type and message."""
    line = json.dumps(reply)
    if len(line.encode()) > ANSWER_LINE_LIMIT and reply.get("status") == "error":
        exc = dict(reply.get("exception") or {})
        slim = {"id": reply["id"], "status": "error", "message": reply.get("message", "")}
        if exc:
            slim["exception"] = {k: exc[k] for k in ("type", "module", "message") if k in exc}
            slim["exception"]["frames"] = []
            slim["exception"]["frames_cut"] = len(exc.get("frames", ())) + exc.get("frames_cut", 0)
        line = json.dumps(slim)
    return line


def serve(compile_fn, stdin=None, stdout=None, frames_root=None, annotate=None):
    """Answers requests until the end of ``stdin`` (default: standard input), then returns 0.

    ``frames_root``: the compiler's source tree; an error answer's frames are those of its files
    (see ``describe_exception``). ``annotate``: a function called with each answer (a dict)
    before it is written, which may add fields to it (pimdiff ignores fields it does not know).

    A line that is not a request ends the server with exit status 2 and the problem on standard
    error (pimdiff never sends one; it is a misuse, not a case's failure).
    """
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout
    # From here on only answers go to standard output: a `print` anywhere (an `annotate`
    # function, a library's import inside the compiler) goes to standard error.
    with contextlib.redirect_stdout(sys.stderr):
        return _serve_lines(compile_fn, stdin, stdout, frames_root, annotate)


def _serve_lines(compile_fn, stdin, stdout, frames_root, annotate):
    while True:
        line = stdin.readline(REQUEST_LINE_LIMIT + 1)
        if not line:
            return 0
        try:
            request_id, case_dir, out_dir = parse_request(line)
        except ProtocolError as e:
            print("pimdiff_serve: %s" % e, file=sys.stderr)
            sys.exit(2)
        reply = answer(request_id, compile_fn, case_dir, out_dir, frames_root)
        if annotate is not None:
            annotate(reply)
        stdout.write(answer_line(reply) + "\n")
        stdout.flush()
