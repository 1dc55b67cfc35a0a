"""The one build setting pyproject.toml cannot hold without an experimental table: the optional C accelerator.

controllers/_ngram_scores.c is the classifier's n-gram pass; `optional=True` lets an install without a C compiler
succeed, and the classifier then runs its numpy path (docs/classifier.md, "Latency"). Everything else is in
pyproject.toml.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "specgate.controllers._ngram_scores",
            sources=["controllers/_ngram_scores.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
