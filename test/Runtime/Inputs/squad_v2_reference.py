"""`lmrt metrics` on SQuAD v2.0 predictions against the official
evaluate-v2.0.py's formulas, ported below as they are (normalize_answer,
get_tokens, compute_exact, compute_f1, get_raw_scores, make_eval_dict with
its HasAns / NoAns split; without no-answer probabilities its threshold keeps
every prediction). With --na, each line also carries a "null_score_diff"
(the no-answer score lmrt eval writes), given to the script as its
--na-prob-file, and find_best_thresh / find_all_best_thresh are checked too:
best_exact, best_f1 and their thresholds (ties among the scores included).
The predictions cover what v2.0 changes: unanswerable
records (no gold answer, or only answers that normalise to nothing), "no
answer" predictions (the empty string), both, and answers scored v1.1's way.
Every metric to 1e-6 (the script's are x100: compared / 100).

  squad_v2_reference.py --lmrt lmrt --dir TMP [--na]
"""
import argparse
import collections
import json
import os
import re
import string
import subprocess
import sys


def normalize_answer(s):
    def remove_articles(text):
        regex = re.compile(r'\b(a|an|the)\b', re.UNICODE)
        return re.sub(regex, ' ', text)

    def white_space_fix(text):
        return ' '.join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return ''.join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def get_tokens(s):
    if not s:
        return []
    return normalize_answer(s).split()


def compute_exact(a_gold, a_pred):
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold, a_pred):
    gold_toks = get_tokens(a_gold)
    pred_toks = get_tokens(a_pred)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


def get_raw_scores(records):
    exact_scores, f1_scores, has_ans = {}, {}, {}
    for i, r in enumerate(records):
        gold_answers = [a for a in r["answers"] if normalize_answer(a)]
        has_ans[i] = bool(gold_answers)
        if not gold_answers:
            gold_answers = ['']
        a_pred = r["prediction"]
        exact_scores[i] = max(compute_exact(a, a_pred) for a in gold_answers)
        f1_scores[i] = max(compute_f1(a, a_pred) for a in gold_answers)
    return exact_scores, f1_scores, has_ans


def make_eval_dict(exact_scores, f1_scores, qid_list=None):
    if not qid_list:
        total = len(exact_scores)
        return collections.OrderedDict([
            ('exact', 100.0 * sum(exact_scores.values()) / total),
            ('f1', 100.0 * sum(f1_scores.values()) / total),
            ('total', total)])
    total = len(qid_list)
    return collections.OrderedDict([
        ('exact', 100.0 * sum(exact_scores[k] for k in qid_list) / total),
        ('f1', 100.0 * sum(f1_scores[k] for k in qid_list) / total),
        ('total', total)])


def find_best_thresh(preds, scores, na_probs, qid_to_has_ans):
    num_no_ans = sum(1 for k in qid_to_has_ans if not qid_to_has_ans[k])
    cur_score = num_no_ans
    best_score = cur_score
    best_thresh = 0.0
    qid_list = sorted(na_probs, key=lambda k: na_probs[k])
    for i, qid in enumerate(qid_list):
        if qid not in scores:
            continue
        if qid_to_has_ans[qid]:
            diff = scores[qid]
        else:
            if preds[qid]:
                diff = -1
            else:
                diff = 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def find_all_best_thresh(main_eval, preds, exact_raw, f1_raw, na_probs, qid_to_has_ans):
    best_exact, exact_thresh = find_best_thresh(preds, exact_raw, na_probs, qid_to_has_ans)
    best_f1, f1_thresh = find_best_thresh(preds, f1_raw, na_probs, qid_to_has_ans)
    main_eval['best_exact'] = best_exact
    main_eval['best_exact_thresh'] = exact_thresh
    main_eval['best_f1'] = best_f1
    main_eval['best_f1_thresh'] = f1_thresh


# A no-answer score a record for --na: ties (0.3), negatives, the order unlike the records'.
NULL_SCORE_DIFFS = [-2.5, 1.0, 0.3, 4.0, 2.0, -1.0, 0.3, 0.5, -0.7, 3.1]


def official(records, na=False):
    exact, f1, has_ans = get_raw_scores(records)
    out = make_eval_dict(exact, f1)
    has = [k for k, v in has_ans.items() if v]
    no = [k for k, v in has_ans.items() if not v]
    if has:
        for k, v in make_eval_dict(exact, f1, qid_list=has).items():
            out['HasAns_' + k] = v
    if no:
        for k, v in make_eval_dict(exact, f1, qid_list=no).items():
            out['NoAns_' + k] = v
    if na:
        preds = {i: r["prediction"] for i, r in enumerate(records)}
        na_probs = {i: r["null_score_diff"] for i, r in enumerate(records)}
        find_all_best_thresh(out, preds, exact, f1, na_probs, has_ans)
    return out


RECORDS = [
    {"prediction": "Denver Broncos", "answers": ["Denver Broncos", "The Broncos"]},
    {"prediction": "the broncos!", "answers": ["Denver Broncos", "The Broncos"]},
    {"prediction": "Santa Clara, California", "answers": ["Levi's Stadium", "Santa Clara"]},
    {"prediction": "", "answers": ["Carolina Panthers"]},
    {"prediction": "", "answers": []},
    {"prediction": "gold", "answers": []},
    {"prediction": "", "answers": ["the", "..."]},
    {"prediction": "an", "answers": ["a"]},
    {"prediction": "golden anniversary", "answers": ["golden anniversary of the Super Bowl", "gold"]},
    {"prediction": "1 2 2 3", "answers": ["2 2 2 1"]},
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lmrt", default="lmrt")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--na", action="store_true")
    a = ap.parse_args()
    records = [dict(r, null_score_diff=d) for r, d in zip(RECORDS, NULL_SCORE_DIFFS)] if a.na else RECORDS
    path = os.path.join(a.dir, "v2na.jsonl" if a.na else "v2.jsonl")
    with open(path, "w") as f:
        for i, r in enumerate(records):
            f.write(json.dumps(dict(record=i, **r)) + "\n")
    ref = official(records, a.na)
    r = subprocess.run([a.lmrt, "metrics", "--predictions", path, "--format", "json"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(r.stdout + r.stderr)
    got = json.loads(r.stdout)["metrics"]
    def lmrt_name(key):  # the overall exact is lmrt's exact_match (as for v1.1); the groups keep the script's names
        return "exact_match" if key == "exact" else key

    worst, missing = 0.0, []
    for key, want in ref.items():
        if key == "total":
            continue
        what = key.rpartition("_")[2]
        name = lmrt_name(key)
        if name not in got:
            missing.append(name)
            continue
        scale = 1.0 if what in ("total", "thresh") else 100.0
        diff = abs(got[name] * scale - want) / scale
        worst = max(worst, diff)
        print(f"{name}: lmrt {got[name]:.6f}, evaluate-v2.0 {want / scale:.6f}")
    extra = sorted(set(got) - {lmrt_name(k) for k in ref})
    ok = worst <= 1e-6 and not missing and not extra
    print(f"squad v2: {len(ref) - 1} metrics, max |diff| {worst:.1e}, missing {missing}, extra {extra}: "
          + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
