"""Issue 33 (8): the Metadata tab's unit column was empty for real 8-ID-I files, which
write their fields without ``units`` attributes; the format's units are supplied."""

import h5py

from xpcsviewer.io.results._analysis import _metadata


def test_known_units_fill_in_and_a_stated_unit_wins(tmp_path):
    p = tmp_path / "m.h5"
    with h5py.File(p, "w") as f:
        d = f.create_group("entry/instrument/detector_1")
        d["distance"] = 9.03
        d["frame_time"] = 2e-5
        d["count_time"] = 0.02
        d["count_time"].attrs["units"] = "ms"
        d["detector_name"] = "rigaku3M"
        f["entry/instrument/incident_beam/incident_energy"] = 12.34
    with h5py.File(p) as f:
        md = _metadata(f, "nexus")
    assert md["entry/instrument/detector_1/distance (m)"] == 9.03
    assert "entry/instrument/detector_1/frame_time (s)" in md
    assert "entry/instrument/detector_1/count_time (ms)" in md  # the file's own unit
    assert "entry/instrument/incident_beam/incident_energy (keV)" in md
    assert "entry/instrument/detector_1/detector_name" in md  # no unit where none is known


def test_real_file_shows_units(real_data_dir):
    from xpcsviewer.io import read_result

    f = sorted((real_data_dir / "aps8idi_llps_saxpcs").glob("*01051_01150_results.hdf"))[0]
    md = read_result(f).metadata
    assert "entry/instrument/detector_1/distance (m)" in md
    assert "entry/instrument/incident_beam/incident_energy (keV)" in md
