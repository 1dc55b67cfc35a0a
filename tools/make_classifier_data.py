"""Build the labelled set for specgate's route classifier from text that is always available offline.

Code comes from the Python standard library's source; prose from `pydoc_data.topics` (the language
reference) and module / function docstrings. Each example wraps a piece of that text in one of many
instruction templates per label. Train and test are split by *source document* (a module or a topic goes
to one side only), so no text is shared between them; the instruction templates are shared, which makes
this set easier than real traffic: retrain on your own labelled requests (`specgate classifier train`).

    python tools/make_classifier_data.py --out data/classifier --per-label 500
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
import sysconfig
import zlib
from functools import cache
from pathlib import Path

LABELS = ("code", "code-edit", "chat", "summarise", "extract", "rag-answer", "translate")
SEED = 7

SYSTEMS = [
    "",
    "",
    "",
    "You are a helpful assistant.",
    "You are a concise assistant.",
    "Answer carefully.",
    "You are an AI assistant for a software company.",
    "Be brief and accurate.",
]
CODE = [
    "Write a Python function that {doc}",
    "Implement `{name}` in Python. It should {doc_lower}",
    "Complete the following code:\n\n{prefix}",
    "Continue this Python module:\n```python\n{prefix}\n```",
    "Can you write code for this? {doc}",
    "I need a function `{name}({args})`: {doc_lower} Please write it.",
    "Generate a Python class that {doc_lower}",
    "Write unit tests for a function `{name}` that {doc_lower}",
    "{prefix}",
    'def {name}({args}):\n    """{doc}"""\n',
]
EDIT = [
    "Refactor the following code to be more readable:\n```python\n{code}\n```",
    "Fix the bug in this function:\n\n{code}",
    "Add type hints to this code:\n```python\n{code}\n```",
    "Rename `{name}` to `{name}_v2` everywhere in:\n{code}",
    "Rewrite this to use a list comprehension where possible:\n```\n{code}\n```",
    "Here is my code:\n{code}\nPlease add docstrings and keep everything else the same.",
    "Convert this function to async:\n```python\n{code}\n```",
    "Make this code faster without changing behaviour:\n\n{code}",
    "Apply PEP 8 formatting to the code below and return the full file.\n\n{code}",
]
CHAT = [
    "Hi! How are you doing today?",
    "What's your favourite {noun}?",
    "Tell me a joke about {noun}.",
    "I feel a bit {adj} today. Any advice?",
    "Can you recommend a good book about {noun}?",
    "What do you think about {noun}?",
    "Let's talk about {noun}. Why do people like it?",
    "Write a short poem about {noun}.",
    "Give me three ideas for a weekend trip.",
    "Who would win in a race, a {noun} or a {noun2}?",
    "I'm bored. Say something {adj}.",
    "Explain {noun} to a five-year-old.",
    "What's the meaning of life, honestly?",
    "Can you help me plan a birthday party for my friend who loves {noun}?",
    "Thanks for your help earlier! One more thing: is {noun} better than {noun2}?",
]
SUMMARISE = [
    "Summarize the following text:\n\n{text}",
    "TL;DR:\n{text}",
    "Give me a short summary of this passage.\n\n{text}",
    "Summarise in three bullet points:\n{text}",
    "{text}\n\nSummarize the above in one paragraph.",
    'Please condense this documentation into two sentences:\n"""\n{text}\n"""',
    "What are the key points of the text below?\n\n{text}",
    "Write an abstract for this:\n{text}",
]
EXTRACT = [
    "Extract all the {things} mentioned in the text below and return them as a JSON list.\n\n{text}",
    'From the following text, return a JSON object with the fields "{f1}" and "{f2}".\n\n{text}',
    "List every {things} in this passage, one per line, nothing else:\n{text}",
    'Parse the text and output JSON: {{"{f1}": ..., "{f2}": ...}}\n\n{text}',
    "{text}\n\nExtract the {things} from the above as a JSON array of strings.",
    "Pull out the {f1} and {f2} from this documentation and give them as key: value pairs.\n{text}",
    "Return only JSON. Fields: {f1}, {f2}. Source text:\n{text}",
]
RAG = [
    "Answer the question using only the context below.\n\nContext:\n{text}\n\nQuestion: {question}",
    "Context: {text}\n\nBased on the context, {question_lower}",
    "Use the following documentation to answer.\n---\n{text}\n---\nQ: {question}\nA:",
    "Here are some retrieved passages:\n[1] {text}\n\nQuestion: {question} Cite the passage you used.",
    "Given this reference text:\n{text}\nWhat does it say about {topic}?",
    "Read the document and answer: {question}\n\nDocument:\n{text}",
]
TRANSLATE = [
    "Translate the following into {lang}:\n\n{text}",
    "Translate to {lang}: {sentence}",
    'How do you say this in {lang}? "{sentence}"',
    "Please render this paragraph in {lang}, keeping the technical terms:\n{text}",
    "{sentence}\n\nTranslate the sentence above to {lang}.",
    "Traduis en {lang} : {sentence}",
    "Give me the {lang} version of:\n{text}",
]
LANGS = ["French", "German", "Spanish", "Italian", "Portuguese", "Japanese", "Dutch", "Polish", "Korean"]
THINGS = ["function names", "keywords", "dates", "numbers", "module names", "error types", "class names"]
FIELDS = ["name", "type", "default", "description", "version", "module", "returns", "raises", "author"]
ADJS = ["tired", "happy", "curious", "anxious", "lazy", "motivated", "silly", "philosophical"]


def code_sources() -> dict[str, str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return {
        f"code:{p.name}": p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(stdlib.glob("*.py"))
        if p.stat().st_size > 2000
    }


def prose_sources() -> dict[str, str]:
    from pydoc_data.topics import topics

    out = {f"topic:{k}": v for k, v in sorted(topics.items()) if len(v) > 600}
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for p in sorted(stdlib.glob("*.py")):
        try:
            doc = ast.get_docstring(ast.parse(p.read_text(encoding="utf-8", errors="replace")))
        except SyntaxError:
            continue
        if doc and len(doc) > 400:
            out[f"doc:{p.name}"] = doc
    return out


@cache
def functions(source: str) -> list[tuple[str, str, str, str]]:
    """(name, args, first docstring line, source) of documented top-level functions."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            doc = ast.get_docstring(node)
            seg = ast.get_source_segment(source, node)
            if doc and seg and 80 < len(seg) < 2500:
                args = ", ".join(a.arg for a in node.args.args)
                found.append((node.name, args, doc.strip().split("\n")[0], seg))
    return found


@cache
def paragraphs(text: str) -> list[str]:
    paras = [re.sub(r"\s+", " ", p).strip() for p in re.split(r"\n\s*\n", text)]
    return [p for p in paras if 120 < len(p) < 1500]


@cache
def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", re.sub(r"\s+", " ", text)) if 30 < len(s) < 200]


@cache
def nouns(text: str) -> list[str]:
    return sorted({w.lower() for w in re.findall(r"\b[a-zA-Z]{5,12}\b", text)})


def make_example(label: str, rng: random.Random, code: str, prose: str) -> str | None:
    funcs = functions(code)
    paras = paragraphs(prose)
    sents = sentences(prose)
    words = nouns(prose)
    if label in ("code", "code-edit") and not funcs:
        return None
    if label not in ("code", "code-edit", "chat") and not paras:
        return None
    if label == "code":
        name, args, doc, seg = rng.choice(funcs)
        lines = seg.split("\n")
        prefix = "\n".join(lines[: rng.randint(1, max(1, len(lines) // 2))])
        return rng.choice(CODE).format(
            name=name, args=args, doc=doc, doc_lower=doc[:1].lower() + doc[1:], prefix=prefix
        )
    if label == "code-edit":
        name, _args, _doc, seg = rng.choice(funcs)
        return rng.choice(EDIT).format(code=seg, name=name)
    if label == "chat":
        return rng.choice(CHAT).format(noun=rng.choice(words), noun2=rng.choice(words), adj=rng.choice(ADJS))
    text = " ".join(paras[i] for i in sorted(rng.sample(range(len(paras)), min(len(paras), rng.randint(1, 3)))))
    if label == "summarise":
        return rng.choice(SUMMARISE).format(text=text)
    if label == "extract":
        f1, f2 = rng.sample(FIELDS, 2)
        return rng.choice(EXTRACT).format(text=text, things=rng.choice(THINGS), f1=f1, f2=f2)
    if label == "rag-answer":
        topic = rng.choice(words)
        question = rng.choice(
            [
                f"What is {topic}?",
                f"How does {topic} work?",
                f"When is {topic} used?",
                f"Why does the text mention {topic}?",
                f"What happens to {topic} here?",
            ]
        )
        return rng.choice(RAG).format(
            text=text, question=question, question_lower=question[0].lower() + question[1:], topic=topic
        )
    sentence = rng.choice(sents) if sents else paras[0][:200]
    return rng.choice(TRANSLATE).format(text=text[:600], sentence=sentence, lang=rng.choice(LANGS))


def as_request(prompt: str, rng: random.Random) -> dict[str, object]:
    system = rng.choice(SYSTEMS)
    if rng.random() < 0.2:
        return {"prompt": prompt}
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    return {"messages": messages}


def side(name: str) -> str:
    # Stable split by source document: about one in five goes to the held-out set.
    return "test" if zlib.crc32(name.encode()) % 5 == 0 else "train"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("data/classifier"))
    parser.add_argument("--per-label", type=int, default=500, help="training examples per label")
    args = parser.parse_args()
    rng = random.Random(SEED)
    codes = code_sources()
    prose = prose_sources()
    split = {
        s: ([v for k, v in codes.items() if side(k) == s], [v for k, v in prose.items() if side(k) == s])
        for s in ("train", "test")
    }
    args.out.mkdir(parents=True, exist_ok=True)
    for name, count in (("train", args.per_label), ("test", max(50, args.per_label // 4))):
        code_docs, prose_docs = split[name]
        rows = []
        for label in LABELS:
            made = 0
            while made < count:
                prompt = make_example(label, rng, rng.choice(code_docs), rng.choice(prose_docs))
                if prompt:
                    rows.append({"label": label, **as_request(prompt, rng)})
                    made += 1
        rng.shuffle(rows)
        with (args.out / f"{name}.jsonl").open("w") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"{name}: {len(rows)} examples from {len(code_docs)} code and {len(prose_docs)} prose documents")


if __name__ == "__main__":
    main()
