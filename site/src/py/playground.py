"""The playground page's Python: runs a snippet as `python snippet.py` would, in a fresh
namespace, with top-level `await` allowed (``await t.tolist_async()``)."""

import linecache
import traceback

from pyodide.code import eval_code_async

FILENAME = "snippet.py"


async def run_snippet(code):
    """Run `code`; its output goes to the page. On an error, print the traceback from the
    snippet's first frame on (as Python would) and return False. The snippet's lines are
    kept as a file's would be, so that tracebacks show them and `@pyburn.kernel` reads its
    kernels' source."""
    linecache.cache[FILENAME] = (len(code), None, code.splitlines(keepends=True), FILENAME)
    try:
        await eval_code_async(code, globals={"__name__": "__main__"}, filename=FILENAME)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt are shown too
        frames = exc.__traceback__
        while frames is not None and frames.tb_frame.f_code.co_filename != FILENAME:
            frames = frames.tb_next
        traceback.print_exception(type(exc), exc, frames)
        return False
    return True
