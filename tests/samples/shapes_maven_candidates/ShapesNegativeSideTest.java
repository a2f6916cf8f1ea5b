package demo;

import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class ShapesNegativeSideTest {
    @Test
    void aNegativeWidthIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> Shapes.area(-1, 2));
    }
}
