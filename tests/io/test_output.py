"""How released values are printed (dpsketch.io.output)."""



def test_quantile_values_print_at_their_resolution():
    from dpsketch.io.output import value_text

    assert value_text(19.93155152, resolution=0.01) == "19.93"
    assert value_text(19.93155152, resolution=1000 / 2**12) == "19.9"
    assert value_text(19.93155152, resolution=1000 / 2**16) == "19.93"
    assert value_text(1234.6, resolution=1) == "1235"
    assert value_text(19.93155152, relative=0.01) == "19.9"
    assert value_text(204.0252683, relative=0.001) == "204"
    assert value_text(19.93155152) == "19.9316"
