"""One module per page of ``memdir ui``: the page, its ``?partial=1`` fragment and its JSON."""
