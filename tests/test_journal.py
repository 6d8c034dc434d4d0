"""The seen set's journal (bspcrawl.journal): keys appended, read back between marks; a
resume goes on in new segments."""

import numpy as np

from bspcrawl import backlog, journal
from bspcrawl.journal import Journal


def test_keys_between_two_marks_come_back_across_segments_and_a_resume_appends_after(
        tmp_path, monkeypatch):
    monkeypatch.setattr(backlog, "SEGMENT_BYTES", 80)  # 10 keys a segment
    j = Journal(tmp_path)
    keys = np.arange(100, dtype=np.int64) * 7 - 300
    j.append(keys[:13])
    base = j.mark()
    j.append(keys[13:40])
    j.append(keys[40:41])
    end = j.mark()
    j.append(keys[41:])  # after the checkpoint: lost with a kill
    assert journal.read(tmp_path, base, end).tolist() == keys[13:41].tolist()
    assert journal.read(tmp_path, end, end).tolist() == []
    assert {p.name for p in tmp_path.iterdir()} >= journal.files_of(base, end)
    again = Journal(tmp_path)  # a resume: new segments after the existing ones
    again.start_after_existing()
    again.append(keys[:2])
    assert journal.read(tmp_path, base, end).tolist() == keys[13:41].tolist()
    assert journal.read(tmp_path, (end[0] + 1, 0), again.mark()).tolist() == keys[:2].tolist()
