"""Train specgate's tiny test model: a 2-layer Llama with its own byte-level BPE tokenizer.

The model exists so that tests and the demo run a *real* vLLM engine without downloading anything.
It is trained on the Python standard library's own source (always present offline), so it writes
code-like text, which is what n-gram speculation likes to accept.

Deterministic: sorted file list, fixed seeds, single-process data order, deterministic torch kernels.
Usage (needs torch + transformers + tokenizers, i.e. the `engine` extra):

    python tools/train_tiny_model.py --out models/specgate-tiny-llama --steps 600
"""

from __future__ import annotations

import argparse
import json
import random
import sysconfig
import time
from pathlib import Path

VOCAB_SIZE = 4096
HIDDEN = 128
LAYERS = 2
HEADS = 4
INTERMEDIATE = 384
MAX_POSITIONS = 2048
SEQ_LEN = 128
BATCH = 32
SEED = 1234
SPECIAL_TOKENS = ["<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]

# A minimal chat template: role markers are special tokens so the model sees a clear structure.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\n' + message['content'] + '<|end|>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)


# Where the training text comes from: the target model learns the stdlib's top-level modules; a drafter can be
# trained on its packages instead (a different mix of the same kind of text, as real drafters are trained on
# data other than their target's).
CORPORA = {"stdlib-modules": "*.py", "stdlib-packages": "*/*.py"}


def corpus_files(max_bytes: int, corpus: str = "stdlib-modules") -> list[Path]:
    """The corpus's stdlib files, sorted, up to `max_bytes` of source in total (tests and site-packages left out)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files: list[Path] = []
    total = 0
    for path in sorted(stdlib.glob(CORPORA[corpus])):
        if path.parent.name in {"test", "tests", "site-packages", "idlelib", "lib2to3"}:
            continue
        size = path.stat().st_size
        if total + size > max_bytes:
            continue
        files.append(path)
        total += size
    return files


def train_tokenizer(files: list[Path], out: Path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train([str(f) for f in files], trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|endoftext|>",
        bos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIAL_TOKENS[1:],
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.model_max_length = MAX_POSITIONS
    fast.save_pretrained(out)
    return fast


def distilled(target_dir: Path, data, sequences: int, prompt_len: int = 64, new: int = SEQ_LEN - 64):
    """`sequences` windows of the corpus, each cut to `prompt_len` tokens and continued greedily by the target model
    for `new` tokens: what the target writes after code, which a drafter must learn to predict (real drafters are
    trained on their target's own answers, regenerated from prompts)."""
    import torch
    from transformers import LlamaForCausalLM

    target = LlamaForCausalLM.from_pretrained(target_dir).eval()
    gen = torch.Generator().manual_seed(SEED + 1)
    starts = torch.randint(0, len(data) - prompt_len - 1, (sequences,), generator=gen).tolist()
    out = []
    with torch.no_grad():
        for i in range(0, sequences, 128):
            prompts = torch.stack([data[s : s + prompt_len] for s in starts[i : i + 128]])
            eos = target.config.eos_token_id
            full = target.generate(
                prompts,
                attention_mask=torch.ones_like(prompts),
                max_new_tokens=new,
                min_new_tokens=new,
                do_sample=False,
                pad_token_id=eos,
            )
            out.append(full)
    return torch.cat(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("models/specgate-tiny-llama"))
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--corpus-bytes", type=int, default=6_000_000)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="stdlib-modules")
    parser.add_argument(
        "--tokenizer", type=Path, help="reuse this model directory's tokenizer (a drafter must share its target's)"
    )
    parser.add_argument("--hidden", type=int, default=HIDDEN)
    parser.add_argument("--layers", type=int, default=LAYERS)
    parser.add_argument("--heads", type=int, default=HEADS)
    parser.add_argument("--intermediate", type=int, default=INTERMEDIATE)
    parser.add_argument(
        "--distill",
        type=Path,
        help="a target model directory: half of each batch is corpus windows continued greedily by it (a drafter "
        "learns what its target writes)",
    )
    parser.add_argument("--distill-sequences", type=int, default=2048)
    args = parser.parse_args()

    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    started = time.monotonic()
    random.seed(SEED)
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(2)
    args.out.mkdir(parents=True, exist_ok=True)

    files = corpus_files(args.corpus_bytes, args.corpus)
    if args.tokenizer is not None:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
        tokenizer.save_pretrained(args.out)
    else:
        tokenizer = train_tokenizer(files, args.out)
    eos = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    ids: list[int] = []
    for f in files:
        ids.extend(tokenizer.encode(f.read_text(encoding="utf-8", errors="replace")))
        ids.append(eos)
    data = torch.tensor(ids, dtype=torch.long)
    teacher = distilled(args.distill, data, args.distill_sequences) if args.distill is not None else None
    tokenized_at = time.monotonic()

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=args.hidden,
        intermediate_size=args.intermediate,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.heads,
        max_position_embeddings=MAX_POSITIONS,
        tie_word_embeddings=True,
        bos_token_id=eos,
        eos_token_id=eos,
        pad_token_id=eos,
        torch_dtype="float32",
    )
    model = LlamaForCausalLM(config)
    optim = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(optim, max_lr=args.lr, total_steps=args.steps, pct_start=0.1)
    gen = torch.Generator().manual_seed(SEED)
    model.train()
    loss_value = float("nan")
    for step in range(args.steps):
        starts = torch.randint(0, len(data) - SEQ_LEN - 1, (BATCH,), generator=gen)
        batch = torch.stack([data[s : s + SEQ_LEN] for s in starts.tolist()])
        if teacher is not None:
            rows = torch.randint(0, len(teacher), (BATCH // 2,), generator=gen)
            batch[: BATCH // 2] = teacher[rows]
        loss = model(input_ids=batch, labels=batch).loss
        optim.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optim.step()
        sched.step()
        loss_value = loss.item()
        if step % 50 == 0 or step == args.steps - 1:
            print(json.dumps({"step": step, "loss": round(loss_value, 4)}), flush=True)

    model.eval()
    model.save_pretrained(args.out, safe_serialization=True)
    GenerationConfig(bos_token_id=eos, eos_token_id=eos, pad_token_id=eos).save_pretrained(args.out)
    finished = time.monotonic()
    report = {
        "corpus": args.corpus,
        "distilled_from": str(args.distill) if args.distill is not None else None,
        "distilled_sequences": args.distill_sequences if args.distill is not None else 0,
        "corpus_files": len(files),
        "corpus_tokens": len(ids),
        "parameters": sum(p.numel() for p in model.parameters()),
        "steps": args.steps,
        "batch": BATCH,
        "seq_len": SEQ_LEN,
        "final_loss": round(loss_value, 4),
        "tokenize_seconds": round(tokenized_at - started, 1),
        "train_seconds": round(finished - tokenized_at, 1),
        "torch": torch.__version__,
    }
    (args.out / "training_report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
