"""Training the demo family on procedural avatars (`make train-demo`).

data: clips and random frames from the procedural renderer · losses: the
objectives shared by trainers · vae / a2v / sr: one trainer per module group ·
recipe: the seeded end-to-end run that writes a weights folder.
"""
