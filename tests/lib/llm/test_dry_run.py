def test_the_common_prefix_length_is_os_path_commonprefix_s():
    import os
    import random

    from spacelm.lib.llm.dry_run import common_prefix_length

    rng = random.Random(3)
    for _ in range(300):
        base = "".join(rng.choice("ab\n") for _ in range(rng.randint(0, 40)))
        a = base + "".join(rng.choice("ab") for _ in range(rng.randint(0, 5)))
        b = base + "".join(rng.choice("ab") for _ in range(rng.randint(0, 5)))
        assert common_prefix_length(a, b) == len(os.path.commonprefix([a, b]))
