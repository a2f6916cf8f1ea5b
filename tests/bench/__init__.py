"""`make bench`: what a restart costs against starting over."""
