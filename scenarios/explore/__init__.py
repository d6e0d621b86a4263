"""``shiftbed explore``: the classroom explorer, a page that answers every change with the model's figures."""
