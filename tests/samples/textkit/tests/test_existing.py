import unittest

from textkit.stats import average_length


class AverageLength(unittest.TestCase):
    def test_average(self):
        self.assertEqual(average_length("ab abcd"), 3)
