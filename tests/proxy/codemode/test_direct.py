"""Direct calls: the `await` of a function's calls is taken out only where the program
cannot tell (every use of the name a call awaited at once at its top level)."""

from __future__ import annotations

import pytest

from proxy.codemode.direct import direct

FUNCTIONS = ["f", "g"]


@pytest.mark.parametrize(
    ("code", "ran", "names"),
    [
        ("x = await f(1)\nprint(x)", "x =       f(1)\nprint(x)", {"f"}),
        ("await f(1)", "f(1)", {"f"}),
        (
            "for i in range(3):\n    y = await f(i=i) + await g()\n    await g()",
            "for i in range(3):\n    y =       f(i=i) +       g()\n    g()",
            {"f", "g"},
        ),
        ('é = await f("é")', 'é =       f("é")', {"f"}),
        ('s = "a\u2028b\x0c"\nx = await f(s)', 's = "a\u2028b\x0c"\nx =       f(s)', {"f"}),
        ("a = 1\r\nawait f(a)\r\n", "a = 1\r\nf(a)\r\n", {"f"}),
        ("r = await f(x=await g())", "r =       f(x=      g())", {"f", "g"}),
        (  # f gathered keeps its await and runs as tasks; g is answered at once
            "import asyncio\nids = await g()\nrs = await asyncio.gather(*[f(i) for i in ids])",
            "import asyncio\nids =       g()\nrs = await asyncio.gather(*[f(i) for i in ids])",
            {"g"},
        ),
    ],
)
def test_calls_awaited_at_once_at_the_top_level_run_directly(
    code: str, ran: str, names: set[str]
) -> None:
    program = direct(code, FUNCTIONS)
    assert (program.code, program.names) == (ran, names)


@pytest.mark.parametrize(
    "code",
    [
        "import asyncio\nawait asyncio.gather(f(), f())",  # gathered: runs as tasks
        "import asyncio\nx = await f()\nawait asyncio.gather(f(), g())",
        "import asyncio\nawait asyncio.gather(f(), await g())",  # f starts while g runs
        "import asyncio\nasync def h():\n    await asyncio.gather(f())\nawait g()",
        "later = f()\nawait g()\nawait later",  # started when the program waits
        "async def h():\n    return await f()\nawait h()",  # a task of its own may gather it
        "def f():\n    return 1\nawait f()",  # the program's own f
        "f = print\nawait f(1)",
        "try:\n    await f()\nexcept Exception as f:\n    pass",
        "x = await (f())",
        "x = await \\\n    f()",
        "g2 = f\nawait g2()",
        "await f(",  # the sandbox says what is wrong
        "print(1)",  # nothing to take out
    ],
)
def test_any_other_use_leaves_the_program_as_it_was(code: str) -> None:
    assert direct(code, FUNCTIONS) == direct(code, [])
    assert direct(code, FUNCTIONS).code == code
