from cellcc import traces


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_uplink_sibling(tmp_path):
    down = write(tmp_path, "x.down", "1\n")
    assert traces.uplink_sibling(down) is None
    up = write(tmp_path, "x.up", "1\n")
    assert traces.uplink_sibling(down) == up
    assert traces.uplink_sibling(up) is None
