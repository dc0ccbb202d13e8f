"""A model given by import path that one-hot encodes its string features before a linear model,
as a user would write one for a profile with categorical features (tests/unit/test_profiles.py)."""

from river import compose, linear_model, preprocessing


def OneHotLogisticRegression(**params):  # noqa: N802 (named like the class it stands for in a profile)
    """A logistic regression on the numeric features and a one-hot encoding of the string ones.

    >>> m = OneHotLogisticRegression()
    >>> m.learn_one({"a": 0.5, "c": "red"}, True)
    >>> m.predict_one({"a": 0.5, "c": "red"})
    True
    """
    num = compose.SelectType((int, float)) | preprocessing.StandardScaler()
    return (num + (compose.SelectType(str) | preprocessing.OneHotEncoder())) | linear_model.LogisticRegression(**params)
