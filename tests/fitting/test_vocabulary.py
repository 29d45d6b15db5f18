"""The fit vocabulary is said once (issue 32): the command line, the g2 tab and the
status reasons read xpcsviewer.fitting.vocabulary."""

from __future__ import annotations

import subprocess
import sys

from xpcsviewer.fitting import vocabulary as v


def _model_actions():
    from xpcsviewer.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    out = {}
    for name, p in sub.choices.items():
        for a in p._actions:
            if "--model" in a.option_strings:
                out[name] = a
    return out


def test_cli_model_choices_are_the_vocabulary():
    actions = _model_actions()
    assert set(actions) == {"fit", "live", "series", "ages"}
    for a in actions.values():
        assert a.choices is v.MODEL_CHOICES  # the same object, not a copy that may drift


def test_models_statuses_and_labels_agree_with_the_enums():
    from xpcsviewer.fitting.models import G2Model
    from xpcsviewer.fitting.status import FitStatus

    assert v.MODEL_CHOICES[0] == "auto"
    assert set(v.MODEL_CHOICES) == {m.value for m in G2Model}
    assert tuple(v.MODEL_MENU) == v.MODEL_CHOICES
    assert tuple(v.MODEL_LABELS) == v.FIT_MODELS
    assert set(v.STATUS_ORDER) == {s.value for s in FitStatus} == set(v.STATUS_COLORS)
    assert set(v.ROUGH_STATUSES) <= set(v.STATUS_ORDER)
    assert all(len(c) == 7 and c[0] == "#" and int(c[1:], 16) >= 0
               for c in v.STATUS_COLORS.values())


def test_adequacy_labels_are_the_vocabulary():
    from xpcsviewer.fitting import adequacy

    assert adequacy.MODEL_LABELS is v.MODEL_LABELS


def test_help_reads_the_vocabulary_without_numpy():
    # `series --help` loads the module file, not the fitting package (numpy, ~80 ms);
    # a later import of the package finds the same module object
    code = (
        "import sys, contextlib, io\n"
        "from xpcsviewer.cli import build_parser\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        build_parser(lazy=True).parse_args(['series', '--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "assert 'numpy' not in sys.modules, 'numpy'\n"
        "voc = sys.modules['xpcsviewer.fitting.vocabulary']\n"
        "import xpcsviewer.fitting as f\n"
        "from xpcsviewer.fitting.adequacy import MODEL_LABELS\n"
        "assert f.vocabulary is voc and MODEL_LABELS is voc.MODEL_LABELS\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
