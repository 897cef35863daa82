"""Stages of the InfiniteTalk family (Wan2.1-I2V + audio adapter): init, context, generation, decode."""
