"""Limitations the oracle leaves open (not compared) while they last."""
SIGNBIT_OF_NAN_OPEN = True   # cnp.signbit calls every NaN positive (the IR has no bitcast yet)
