"""R24: layers pair by qualified name, and where names differ, by call order and output shape."""

from torch2ms.align.matching import match_events


def ev(name, leaf, shape, call=0):
    return {"name": name, "call": call, "leaf": leaf, "out_shapes": [shape]}


def test_r24_pairs_by_name_then_by_order_and_shape():
    torch_events = [
        ev("conv", True, (1, 8, 4, 4)),
        ev("bn", True, (1, 8, 4, 4)),
        ev("act", True, (1, 8, 4, 4)),
        ev("head", True, (1, 10)),
        ev("", False, (1, 10)),
    ]
    # The port renamed bn → norm and head → fc, and records one extra wrapper call.
    ms_events = [
        ev("conv", True, (1, 8, 4, 4)),
        ev("norm", True, (1, 8, 4, 4)),
        ev("act", True, (1, 8, 4, 4)),
        ev("wrap", False, (1, 8)),
        ev("fc", True, (1, 10)),
        ev("", False, (1, 10)),
    ]
    pairs, how = match_events(torch_events, ms_events)
    assert how == "name+order"
    assert pairs == {0: 0, 1: 1, 2: 2, 3: 4, 4: 5}  # renamed layers found by order and shape; "wrap" unpaired


def test_r24_names_alone_when_they_all_match():
    events = [ev("a", True, (2, 3)), ev("a", True, (2, 3), call=1)]
    pairs, how = match_events(events, list(reversed(events)))
    assert how == "name" and pairs == {0: 1, 1: 0}  # the call number disambiguates repeated calls
