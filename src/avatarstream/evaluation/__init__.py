"""Measuring the three promises on procedural avatars, where the ground truth is known."""
