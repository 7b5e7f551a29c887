"""Text for language models: the program inside an LM's completion, and a task rendered as a
prompt.

extract_program() finds the program a completion holds: the last fenced code block that carries a
//@format directive (```cuda, ```cpp, ``` ...; an unclosed fence at the end counts, as a cut-off
completion has one), else the text from the first //@format line on when there is no fence at all.
When there is none it says why, in one sentence, instead of guessing.

build_prompt() renders a task the way the method feeds a matrix to its policy - the row and column
indices of its nonzeros, at most 128 of them sampled with a seed (the public code's --max-nnz) -
with what a text model must know to answer in this project's kernel ABI: the operation, the
directives, the kernel signature of each format asked for, and the prelude the evaluator prepends
(value_t and the matrix constants). The text is the C++ library's (env/prompt_text.hpp), so the
C++ agents' text-only prompt form reads the same (it is this text without formats and
instructions). The same sampled nonzeros come as the environment's arrays (their sinusoidal
embedding, the features) for a model that takes the matrix as a soft prompt.
"""

import re
from dataclasses import dataclass, field

from . import _core
from .datasets import store as _store
from .datasets import task as _task

_FENCE = re.compile(r"^[ \t]*```[^\n`]*$", re.MULTILINE)
_FORMAT_LINE = re.compile(r"^[ \t]*//@format\b", re.MULTILINE)
FORMATS = ("csr", "coo", "ell", "sell", "bsr")
# Parameters for the formats that take them, when a prompt shows their signature and prelude.
DEFAULT_FORMAT_SPECS = {"csr": "csr", "coo": "coo", "ell": "ell", "sell": "sell C=32 sigma=1",
                        "bsr": "bsr R=4 C=4"}


@dataclass
class ExtractedProgram:
    completion: str
    program: str | None  # None: no program found
    source: str | None  # "code_block" or "directives"
    verdict: str  # why there is none, or how it was found

    @property
    def ok(self):
        return self.program is not None


def _code_blocks(text):
    """The bodies of fenced code blocks, in order; an unclosed last fence runs to the end."""
    fences = list(_FENCE.finditer(text))
    blocks = []
    i = 0
    while i < len(fences):
        start = fences[i].end() + 1
        end = fences[i + 1].start() if i + 1 < len(fences) else len(text)
        blocks.append(text[start:end] if start <= len(text) else "")
        i += 2
    return blocks


def extract_program(completion):
    """The program in an LM completion (a str, or a chat message list whose last message's
    content is taken), with a verdict when there is none."""
    if isinstance(completion, list):  # TRL's conversational format: [{"role", "content"}, ...]
        completion = completion[-1]["content"] if completion else ""
    if isinstance(completion, dict):
        completion = completion.get("content", "")
    if not isinstance(completion, str):
        raise TypeError(f"completion: expected text or chat messages, got {type(completion).__name__}")
    blocks = _code_blocks(completion)
    if blocks:
        with_format = [b for b in blocks if _FORMAT_LINE.search(b)]
        if not with_format:
            return ExtractedProgram(completion, None, None,
                                    f"no program: {len(blocks)} code block(s) but none has a "
                                    "//@format directive (a program names its storage format "
                                    "first, e.g. //@format csr)")
        return ExtractedProgram(completion, with_format[-1].strip("\n") + "\n", "code_block",
                                "code_block")
    found = _FORMAT_LINE.search(completion)
    if found:
        line_start = completion.rfind("\n", 0, found.start()) + 1
        return ExtractedProgram(completion, completion[line_start:].rstrip() + "\n", "directives",
                                "directives")
    return ExtractedProgram(completion, None, None,
                            "no program: the completion has neither a fenced code block nor a "
                            "//@format directive")


@dataclass
class Prompt:
    task: object
    text: str
    arrays: dict = field(repr=False)  # rows, cols, embedding, features, count (numpy)
    seed: int = 0


def build_prompt(task, *, formats=("csr",), nnz_samples=128, seed=0, store=None,
                 observation=None, instructions=True):
    """A Prompt for `task` (a Task, a task's text or a matrix URI): its text and its arrays.

    formats: the formats whose signature and prelude the text shows ("csr", ... or "all";
    parametrised ones with DEFAULT_FORMAT_SPECS' parameters, or given as "sell C=64 sigma=1").
    nnz_samples and seed: how many nonzeros are sampled and with which episode seed (as the
    environment samples them; all of them when the matrix has fewer). observation: further
    observation options (embedding_dim, index_scaling, stratification)."""
    task = _task(task)
    store = store if store is not None else _store()
    options = dict(observation or {})
    options["nnz_samples"] = nnz_samples
    arrays = _core.observe(store, task, seed, options)
    if formats == "all":
        formats = FORMATS
    specs = [DEFAULT_FORMAT_SPECS.get(f, f) for f in formats]
    text = _core.prompt_text(store, task, seed, options, specs, instructions)
    return Prompt(task=task, text=text, arrays=arrays, seed=seed)
