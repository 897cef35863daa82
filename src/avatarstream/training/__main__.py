"""`python -m avatarstream.training`: the demo family's training recipe."""

from avatarstream.training.recipe import main

raise SystemExit(main())
