"""Request processors: each handles a few request codes and gets only its collaborators."""
