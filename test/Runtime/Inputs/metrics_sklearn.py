"""Scores the same predictions with `lmrt metrics --format json` and with
scikit-learn / scipy (or, where neither has the metric, the published
definition written out below), and fails unless every metric agrees to 1e-6.
Prints the largest difference per metric (test/Runtime/metrics-sklearn.test)."""
import argparse
import collections
import json
import math
import os
import re
import string
import subprocess
import sys
from fractions import Fraction

import numpy as np
import scipy.optimize
import scipy.special
import scipy.stats
from scipy.special import comb
from sklearn.metrics import accuracy_score, f1_score, log_loss, matthews_corrcoef

TOL = 1e-6
worst = collections.defaultdict(float)


def lmrt_metrics(args, records, name, *extra):
    path = os.path.join(args.dir, name)
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    out = subprocess.run([args.lmrt, "metrics", "--predictions", path, "--format", "json", *extra],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out)["metrics"], path


def compare(metric, ours, reference):
    diff = abs(ours - reference)
    worst[metric] = max(worst[metric], diff)
    if not diff <= TOL:
        sys.exit(f"{metric}: lmrt {ours!r} vs reference {reference!r} (|diff| {diff:.3g} > {TOL})")


def classification(args, rng):
    for trial in range(4):
        classes = 2 if trial == 0 else 5
        n = 400
        labels = rng.integers(0, classes, n)
        # Mostly right, and class classes-1 never predicted (sklearn's zero_division case).
        preds = np.where(rng.random(n) < 0.6, labels, rng.integers(0, classes, n))
        preds = np.where(preds == classes - 1, 0, preds) if classes > 2 else preds
        if trial % 2 == 1:
            logits = rng.normal(size=(n, classes)) + 3 * np.eye(classes)[preds]
            records = [{"label": int(l), "logits": [float(v) for v in z]} for l, z in zip(labels, logits)]
            preds = logits.argmax(axis=1)
        else:
            records = [{"label": int(l), "prediction": int(p)} for l, p in zip(labels, preds)]
        m, _ = lmrt_metrics(args, records, f"cls{trial}.jsonl")
        compare("accuracy", m["accuracy"], accuracy_score(labels, preds))
        compare("f1_macro", m["f1_macro"], f1_score(labels, preds, average="macro", zero_division=0))
        compare("f1_micro", m["f1_micro"], f1_score(labels, preds, average="micro"))
        compare("mcc", m["mcc"], matthews_corrcoef(labels, preds))
        if classes == 2:
            compare("f1_binary", m["f1"], f1_score(labels, preds, average="binary"))


def regression(args, rng):
    for trial in range(3):
        n = 300
        labels = rng.normal(size=n) * 2 + 1e3 * trial
        preds = labels + rng.normal(size=n)
        if trial > 0:  # ties: rounded values, as 0-5 similarity scores are
            labels, preds = np.round(labels, 0), np.round(preds * 2) / 2
        m, _ = lmrt_metrics(args, [{"label": float(l), "prediction": float(p)} for l, p in zip(labels, preds)],
                            f"reg{trial}.jsonl", "--task", "regression")
        compare("pearson", m["pearson"], scipy.stats.pearsonr(labels, preds)[0])
        compare("spearman", m["spearman"], scipy.stats.spearmanr(labels, preds)[0])


def ece_reference(logits, labels, bins=15):
    """Guo et al. 2017: bins (m/M, (m+1)/M] over the top softmax probability."""
    probs = scipy.special.softmax(logits, axis=1)
    conf, pred = probs.max(axis=1), probs.argmax(axis=1)
    right = pred == labels
    ece = 0.0
    for m in range(bins):
        inside = (conf > m / bins) & (conf <= (m + 1) / bins)
        if inside.any():
            ece += inside.mean() * abs(right[inside].mean() - conf[inside].mean())
    return ece


def nll(logits, labels):
    return log_loss(labels, scipy.special.softmax(logits, axis=1), labels=list(range(logits.shape[1])))


def calibration(args, rng):
    classes = 4

    def draw(n):
        labels = rng.integers(0, classes, n)
        # Overconfident: large logits, right about 70% of the time.
        hit = np.where(rng.random(n) < 0.7, labels, rng.integers(0, classes, n))
        logits = 2 * rng.normal(size=(n, classes)) + 6 * np.eye(classes)[hit]
        return logits, labels

    (vz, vy), (tz, ty) = draw(600), draw(500)
    as_records = lambda z, y: [{"label": int(l), "logits": [float(v) for v in row]} for row, l in zip(z, y)]
    val_path = os.path.join(args.dir, "val.jsonl")
    with open(val_path, "w") as f:
        for r in as_records(vz, vy):
            f.write(json.dumps(r) + "\n")
    m, _ = lmrt_metrics(args, as_records(tz, ty), "test.jsonl", "--task", "calibration", "--calibrate", val_path)
    compare("nll", m["nll"], nll(tz, ty))
    compare("ece", m["ece"], ece_reference(tz, ty))
    fit = scipy.optimize.minimize_scalar(lambda logt: nll(vz / math.exp(logt), vy),
                                         bounds=(math.log(1e-2), math.log(1e2)), method="bounded",
                                         options={"xatol": 1e-10})
    t = math.exp(fit.x)
    compare("temperature", m["temperature"], t)
    compare("nll_scaled", m["nll_scaled"], nll(tz / t, ty))
    # ECE at our own T: the bins are discontinuous in T, so the reference takes the same T.
    compare("ece_scaled", m["ece_scaled"], ece_reference(tz / m["temperature"], ty))


def pass_at_k(args, rng):
    problems = []
    for _ in range(40):
        n = int(rng.integers(100, 400))
        problems.append((n, int(rng.integers(0, n // 3)) if rng.random() < 0.8 else n))
    m, _ = lmrt_metrics(args, [{"n": n, "correct": c} for n, c in problems], "passk.jsonl", "--k", "1,10,100")
    for k in (1, 10, 100):
        # Exact rational arithmetic on the binomials of the definition (Chen et al. 2021).
        ref = sum(1 - Fraction(comb(n - c, k, exact=True), comb(n, k, exact=True)) for n, c in problems) / len(problems)
        compare(f"pass@{k}", m[f"pass@{k}"], float(ref))


def language_model(args, rng):
    rows = [{"nll": float(rng.uniform(100, 5000)), "tokens": int(rng.integers(50, 1000)), "bytes": int(rng.integers(100, 3000))}
            for _ in range(20)]
    m, _ = lmrt_metrics(args, rows, "lm.jsonl")
    nll_sum = sum(r["nll"] for r in rows)
    compare("perplexity", m["perplexity"], float(np.exp(nll_sum / sum(r["tokens"] for r in rows))))
    compare("bits_per_byte", m["bits_per_byte"], nll_sum / math.log(2) / sum(r["bytes"] for r in rows))


# SQuAD v1.1's official evaluate-v1.1.py, its scoring functions as published.
def normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def f1_score_squad(prediction, ground_truth):
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def exact_match_score(prediction, ground_truth):
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
    return max(metric_fn(prediction, gt) for gt in ground_truths)


def squad(args, rng):
    tricky = [
        ("The Eiffel Tower", ["Eiffel Tower"]), ("an apple a day", ["apple day", "An Apple"]),
        ("theatre", ["the atre"]), ("  Paris,  France. ", ["paris france"]), ("A", ["the"]),
        ("U.S.A.", ["USA"]), ("don't", ["do not", "dont"]), ("1,000 km", ["1000 km"]),
        ("the the cat", ["cat"]), ("Cat\tand\ndog", ["cat and dog"]), ("(a) b", ["b"]),
        ("ÉCOLE normale", ["école normale"]), ("Ωmega", ["ωmega"]), ("naïve Café", ["naïve café"]),
        ("Москва", ["москва"]), ("", ["something"]), ("under_score", ["under score", "underscore"]),
        ("new york new york", ["new york"]), ("a an the", ["!!!"]), ("It's 5 o'clock", ["its 5 oclock"]),
    ]
    words = "the a an The Denver Broncos won Super Bowl 50 in 2016 , . ! ? ' \" - ( ) champion AFC NFC".split()
    for _ in range(200):
        gold = [" ".join(rng.choice(words, int(rng.integers(1, 6)))) for _ in range(int(rng.integers(1, 4)))]
        pred = " ".join(rng.choice(words, int(rng.integers(0, 7))))
        tricky.append((pred, gold))
    records = [{"prediction": p, "answers": g} for p, g in tricky]
    m, _ = lmrt_metrics(args, records, "squad.jsonl")
    em = np.mean([metric_max_over_ground_truths(exact_match_score, p, g) for p, g in tricky])
    f1 = np.mean([metric_max_over_ground_truths(f1_score_squad, p, g) for p, g in tricky])
    compare("squad_exact_match", m["exact_match"], em)
    compare("squad_f1", m["f1"], f1)
    # One record at a time for the hand-written cases: a mean could hide two errors that cancel.
    for i, (p, g) in enumerate(tricky[:20]):
        m, _ = lmrt_metrics(args, [{"prediction": p, "answers": g}], f"squad{i}.jsonl")
        compare("squad_exact_match", m["exact_match"], metric_max_over_ground_truths(exact_match_score, p, g))
        compare("squad_f1", m["f1"], metric_max_over_ground_truths(f1_score_squad, p, g))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lmrt", required=True)
    parser.add_argument("--dir", required=True)
    args = parser.parse_args()
    rng = np.random.default_rng(21)
    for check in (classification, regression, calibration, pass_at_k, language_model, squad):
        check(args, rng)
    for metric, diff in sorted(worst.items()):
        print(f"{metric}: max |diff| {diff:.2e}")
    print(f"all {len(worst)} metrics within {TOL}")


if __name__ == "__main__":
    main()
